package main

import (
	"context"
	"flag"
	"log"

	"github.com/weirhq/weir/jobs/frauddetection"
)

func main() {
	input := flag.String("input", "", "JSON lines {\"account\", \"amount\", \"ts\"}")
	output := flag.String("output", "", "file for the alerts, as JSON lines")
	backend := flag.String("state-backend", "hashmap", "hashmap or pebble")
	parallelism := flag.Int("parallelism", 2, "parallelism of the detector")
	flag.Parse()
	if *input == "" || *output == "" {
		log.Fatal("need -input and -output")
	}
	err := frauddetection.Run(context.Background(), frauddetection.Options{
		Input: *input, Output: *output, StateBackend: *backend, Parallelism: *parallelism,
	})
	if err != nil {
		log.Fatal(err)
	}
}

package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/weirhq/weir/jobs/wordcount"
)

func main() {
	input := flag.String("input", "", "text file or directory (default: a sample text)")
	output := flag.String("output", "", "file for word<TAB>count lines (default: print the top 20)")
	parallelism := flag.Int("parallelism", 2, "parallelism")
	flag.Parse()
	err := wordcount.Run(context.Background(), wordcount.Options{Input: *input, Output: *output, Parallelism: *parallelism, Stdout: os.Stdout})
	if err != nil {
		log.Fatal(err)
	}
}

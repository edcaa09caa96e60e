package main

import (
	"os"

	"github.com/weirhq/weir/internal/cli"
	// Checkpoints may go to S3 (s3://bucket/prefix).
	_ "github.com/weirhq/weir/internal/checkpoint/storage/s3store"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

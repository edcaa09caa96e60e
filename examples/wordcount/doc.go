// Wordcount counts the words of a text file with Weir's DataStream API:
// FlatMap splits lines into words, KeyBy and Reduce keep a count per word.
//
//	go run . -input in.txt -output counts.txt -parallelism 2
//	go run .          # counts a sample text and prints the top ten
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main

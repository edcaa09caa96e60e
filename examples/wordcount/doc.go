// Wordcount counts the words of a text file with Weir's DataStream API.
//
//	go run ./examples/wordcount -input in.txt -output counts.txt -parallelism 2
package main

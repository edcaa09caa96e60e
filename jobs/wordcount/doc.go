// Package wordcount is the built-in wordcount job: it reads text, lower-cases
// it, splits it on every run of characters that are not Unicode letters or
// digits, and writes the final count of each distinct word as "word<TAB>count".
package wordcount

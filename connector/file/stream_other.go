//go:build !unix

package file

func wakeFIFOOpen(string) {}

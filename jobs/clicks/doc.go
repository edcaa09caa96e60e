// Package clicks is the built-in continuous job: a generator of page clicks,
// keyed by page, with a rolling count per page printed as it changes. It runs
// until it is canceled (Ctrl-C in the CLI), so a newcomer sees a live stream.
package clicks

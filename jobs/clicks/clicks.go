package clicks

import (
	"context"
	"fmt"

	"github.com/weirhq/weir"
)

// Click is one page view.
type Click struct {
	Page   string
	User   int64
	Clicks int64
}

func (c Click) String() string { return fmt.Sprintf("%-10s %d clicks", c.Page, c.Clicks) }

var pages = []string{"/home", "/search", "/cart", "/checkout", "/product/1", "/product/2", "/about", "/help"}

// Generate makes the i-th click deterministically: a skewed choice of page.
func Generate(i int64) Click {
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	x ^= x >> 31
	p := int(x % uint64(len(pages)*(len(pages)+1)/2))
	k := 0
	for p >= len(pages)-k {
		p -= len(pages) - k
		k++
	}
	return Click{Page: pages[k], User: int64(x>>40) % 1000, Clicks: 1}
}

// Options configure a run.
type Options struct {
	RatePerSecond float64 // clicks per second (default 5)
	Count         int64   // clicks to generate; < 0 or 0: forever
	Parallelism   int
	Config        weir.Config
}

// Build declares the job and returns the rolling counts.
func Build(env *weir.Environment, o Options) weir.DataStream[Click] {
	count := o.Count
	if count == 0 {
		count = -1
	}
	rate := o.RatePerSecond
	if rate == 0 {
		rate = 5
	}
	// UIDs: savepoints of the job restore after a change of its graph.
	clicks := weir.Generate(env, count, rate, Generate).Name("Source: clicks").UID("clicks")
	return weir.Reduce(weir.KeyBy(clicks, func(c Click) string { return c.Page }), func(a, b Click) Click {
		a.Clicks += b.Clicks
		return a
	}).Name("Count per page").UID("count-per-page")
}

// Run runs the job, printing every updated count, until ctx is canceled (or
// Count clicks were counted). It takes no checkpoints but savepoints (weir
// savepoint, weir stop), and resumes from one with Config.ResumeFrom: the
// generator goes on from its position and the counts from theirs.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if o.Parallelism > 0 {
		cfg.Parallelism = o.Parallelism
	}
	env := weir.NewEnvironment(cfg)
	weir.Print(Build(env, o))
	_, err := env.Execute(ctx, "clicks")
	return err
}

package main

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"

	"github.com/weirhq/weir"
)

// Click is one page view.
type Click struct {
	Page  string
	Count int64
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	pages := []string{"/home", "/search", "/cart", "/checkout"}
	clicks := weir.Generate(env, -1, 10, func(i int64) Click {
		return Click{Page: pages[(i*i+i/3)%int64(len(pages))], Count: 1}
	})
	counts := weir.Reduce(weir.KeyBy(clicks, func(c Click) string { return c.Page }), func(a, b Click) Click {
		a.Count += b.Count
		return a
	})
	weir.Print(counts)
	if _, err := env.Execute(ctx, "clicks"); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

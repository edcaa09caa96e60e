package s3store

import (
	"context"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

func init() {
	storage.RegisterScheme(s3blob.Scheme, open)
}

func open(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	// A URLOpener keeps the options of the last URL it opened: use a new one.
	return (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
}

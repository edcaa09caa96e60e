// Package s3store registers the s3:// scheme with package storage, through
// gocloud.dev/blob/s3blob and the AWS SDK v2. It is separate so that binaries
// that do not import it do not link the SDK: import it for its side effect,
//
//	import _ "github.com/weirhq/weir/internal/checkpoint/storage/s3store"
//
// URLs: s3://bucket[/prefix][?options], with s3blob v0.47's options (see
// storage.Open). For an S3-compatible server:
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&use_path_style=true
package s3store

module github.com/weirhq/weir

go 1.26

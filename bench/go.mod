module github.com/packfs/packfs/bench

go 1.26.0

require (
	github.com/benbjohnson/immutable v0.4.3
	github.com/hashicorp/go-immutable-radix/v2 v2.1.0
	github.com/packfs/packfs v0.0.0
	github.com/spf13/afero v1.15.0
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.0 // indirect
	golang.org/x/exp v0.0.0-20221215174704-0915cd710c24 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace github.com/packfs/packfs => ../

module github.com/packfs/packfs

go 1.26.0

require github.com/google/go-cmp v0.7.0

require (
	github.com/spf13/afero v1.15.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

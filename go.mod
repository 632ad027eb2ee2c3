module github.com/packfs/packfs

go 1.26.0

require github.com/google/go-cmp v0.7.0

require github.com/klauspost/compress v1.19.2

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/spf13/afero v1.15.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.44.0
	golang.org/x/text v0.28.0 // indirect
)

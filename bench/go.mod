module github.com/packfs/packfs/bench

go 1.26.0

require (
	github.com/benbjohnson/immutable v0.4.3
	github.com/go-git/go-billy/v5 v5.9.2
	github.com/hashicorp/go-immutable-radix/v2 v2.1.0
	github.com/klauspost/compress v1.19.2
	github.com/packfs/packfs v0.0.0
	github.com/spf13/afero v1.15.0
	go.etcd.io/bbolt v1.4.3
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.0 // indirect
	golang.org/x/exp v0.0.0-20260410095643-746e56fc9e2f // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.39.0 // indirect
)

replace github.com/packfs/packfs => ../

// Package treapbench compares treap.Map with other persistent ordered
// maps in Go: github.com/benbjohnson/immutable's SortedMap (a B+tree) and
// github.com/hashicorp/go-immutable-radix (a radix tree). It lives in its
// own module so that their dependencies stay out of the library. The
// benchmarks are in treapbench_test.go:
//
//	cd bench && go test -run x -bench . ./treapbench/
package treapbench

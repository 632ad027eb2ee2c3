package mem

import (
	"slices"
	"strings"

	"github.com/packfs/packfs/layer"
)

// Watch reports every change of the live layer (see [layer.WatchFS]),
// under the names the changed files have once it is made, whatever names
// or handles made it. It never fails.
func (f *FS) Watch(filter func(layer.Change) bool) (*layer.Watcher, error) {
	return f.feed.Watch(filter), nil
}

// note publishes a change of op to the file of ino; f.mu is held. It
// costs one atomic load when nobody watches. A file no longer linked
// has no name to report.
func (f *FS) note(op layer.Op, ino *inode) {
	if f.feed.Active() { // inlined: the rest is a call only when watched
		f.publish(op, ino)
	}
}

func (f *FS) publish(op layer.Op, ino *inode) {
	if p, ok := f.pathOf(ino); ok {
		f.feed.Publish(layer.Change{Op: op, Name: p})
	}
}

// pathOf returns the name of ino's file in the live tree ("." for the
// root); ok is false once it is unlinked. f.mu is held.
func (f *FS) pathOf(ino *inode) (p string, ok bool) {
	var elems []string
	for ino != f.rootIno {
		parent := ino.parent.Load()
		if parent == nil {
			return "", false
		}
		elems = append(elems, ino.cur.Load().name)
		ino = parent
	}
	if len(elems) == 0 {
		return ".", true
	}
	slices.Reverse(elems)
	return strings.Join(elems, "/"), true
}

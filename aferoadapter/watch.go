package aferoadapter

import "github.com/packfs/packfs/layer"

// Watch reports the changes of the file system under a, made through a
// or beside it, when it is a [layer.WatchFS] (see there); otherwise it
// returns an error wrapping errors.ErrUnsupported. Changes name entries
// as io/fs paths ("dir/file", "." for the root), not as the OS-style
// names a takes.
func (a *Fs) Watch(filter func(layer.Change) bool) (*layer.Watcher, error) {
	if w, ok := a.fsys.(layer.WatchFS); ok {
		return w.Watch(filter)
	}
	return nil, layer.Unsupported("watch", ".")
}

package packfs

import "github.com/packfs/packfs/layer"

var _ layer.WatchFS = (*Store)(nil)

// Watch reports the store's changes (see [layer.WatchFS]) once its
// readers see them: a change made alone at once, a transaction's all
// together at its commit, and none of one that does not commit. When the
// log fails and readers go back to an older state, watchers get
// [layer.OpReset]. It never fails.
func (s *Store) Watch(filter func(layer.Change) bool) (*layer.Watcher, error) {
	return s.feed.Watch(filter), nil
}

// changeOf is the change that o, applied to u, made, under u's own names.
func changeOf(u *FS, o *op) layer.Change {
	name := func(p string, follow bool) string { return canonical(u, p, follow) }
	switch o.kind {
	case opMkdir, opMkdirAll:
		return layer.Change{Op: layer.OpCreate, Name: name(o.path, false)}
	case opOpen, opWriteFile:
		return layer.Change{Op: layer.OpCreate | layer.OpWrite, Name: name(o.path, o.a&int64(noFollow) == 0)}
	case opWriteAt, opTruncate:
		// Through a handle, whose name is the union's own already.
		return layer.Change{Op: layer.OpWrite, Name: o.path}
	case opRemove, opRemoveAll:
		return layer.Change{Op: layer.OpRemove, Name: name(o.path, false)}
	case opRename:
		return layer.Change{Op: layer.OpRename, Name: name(o.path, false), NewName: name(o.path2, false)}
	case opSymlink:
		return layer.Change{Op: layer.OpCreate, Name: name(o.path2, false)}
	case opChmod, opChown, opChtimes:
		return layer.Change{Op: layer.OpChattr, Name: name(o.path, true)}
	case opLchown, opLchtimes:
		return layer.Change{Op: layer.OpChattr, Name: name(o.path, false)}
	}
	return layer.Change{Op: layer.OpReset}
}

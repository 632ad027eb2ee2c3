package dirfs

// SetStatHook sets the hook told of each lstat of a nested name (whether
// the directory cache answered it, and the inode found) until the returned
// function is called. No stat may run while it is set or reset.
func SetStatHook(h func(name string, cached bool, ino uint64)) (reset func()) {
	statHook = h
	return func() { statHook = nil }
}

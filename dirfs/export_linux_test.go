package dirfs

// SetStatHook sets the hook told of each lstat of a nested name (whether
// the directory cache answered it, and the inode found) until the returned
// function is called. No stat may run while it is set or reset.
func SetStatHook(h func(name string, cached bool, ino uint64)) (reset func()) {
	statHook = h
	return func() { statHook = nil }
}

// WalkAlways makes every lookup of an openat2 FS walk the name one element
// at a time, as it does when openat2 keeps failing with EAGAIN.
func WalkAlways() Option { return func(o *options) { o.walkAlways = true } }

// Walks returns how many lookups were walked one element at a time.
func Walks() int64 { return walks.Load() }

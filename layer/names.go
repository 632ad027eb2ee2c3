package layer

import (
	"os"
	"strings"
	"syscall"
)

// Linux's limits on names, which every writable layer applies.
const (
	// NameMax is the most bytes one path element may hold (NAME_MAX).
	NameMax = 255
	// PathMax is the size of the kernel's path buffer, terminating NUL
	// included (PATH_MAX): a path or a symlink target holds at most
	// PathMax-1 bytes.
	PathMax = 4096
)

// CheckName checks a name that is about to be created (by open with
// O_CREATE, mkdir, symlink, rename or whiteout) against Linux's limits: it
// returns syscall.EINVAL for a name holding a NUL byte (os refuses it before
// any system call), syscall.ENAMETOOLONG for a name of PathMax bytes or
// more or with an element over NameMax bytes, and nil otherwise. It is
// [CheckPath] and then [CheckElem] of every element.
func CheckName(name string) error {
	if err := CheckPath(name); err != nil {
		return err
	}
	for name != "" {
		elem := name
		if i := strings.IndexByte(name, '/'); i >= 0 {
			elem, name = name[:i], name[i+1:]
		} else {
			name = ""
		}
		if err := CheckElem(elem); err != nil {
			return err
		}
	}
	return nil
}

// CheckPath applies the checks Linux makes on a whole path before it
// looks at any element: syscall.EINVAL for a NUL byte (os's check) and
// syscall.ENAMETOOLONG for PathMax bytes or more (the kernel's). A layer
// calls it before resolving a name it may create, and [CheckElem] on the
// new element once its parent is found, so that a missing parent is ENOENT
// first, as on Linux.
func CheckPath(name string) error {
	if strings.IndexByte(name, 0) >= 0 {
		return syscall.EINVAL
	}
	if len(name) >= PathMax {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// CheckOpenFlag returns syscall.EINVAL for an open's flag that asks to
// create a directory (os.O_CREATE with syscall.O_DIRECTORY), which Linux
// refuses before it looks at the path, whatever the name is (since 6.4);
// nil otherwise.
func CheckOpenFlag(flag int) error {
	if flag&os.O_CREATE != 0 && flag&syscall.O_DIRECTORY != 0 {
		return syscall.EINVAL
	}
	return nil
}

// CheckElem returns syscall.ENAMETOOLONG for a path element over NameMax
// bytes, as a Linux file system's lookup does, and nil otherwise.
func CheckElem(elem string) error {
	if len(elem) > NameMax {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// CheckSymlink makes the checks symlink(2) through os makes before it
// resolves newname, in their order: syscall.EINVAL for a NUL byte in target
// or newname, syscall.ENOENT for an empty target, and syscall.ENAMETOOLONG
// for a target or a newname of PathMax bytes or more. The layer then
// resolves newname's parent and applies [CheckElem] to its last element.
func CheckSymlink(target, newname string) error {
	if strings.IndexByte(target, 0) >= 0 || strings.IndexByte(newname, 0) >= 0 {
		return syscall.EINVAL
	}
	if target == "" {
		return syscall.ENOENT
	}
	if len(target) >= PathMax || len(newname) >= PathMax {
		return syscall.ENAMETOOLONG
	}
	return nil
}

package pathwalk

import "unicode/utf8"

// ValidPath reports what fs.ValidPath reports, in one pass over name's
// bytes: its elements are neither "", "." nor "..", and it is UTF-8. A
// name of ASCII alone, the common case, is never read a second time for
// UTF-8, where fs.ValidPath reads every name twice; the union and the
// in-memory layer check every name they are given, several times on a
// write's way down.
func ValidPath(name string) bool {
	if name == "." {
		return true
	}
	var high byte // the OR of every byte: 0x80 set if any is not ASCII
	start := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		high |= c
		if c == '/' {
			if !nameElem(name[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	if !nameElem(name[start:]) {
		return false
	}
	return high < utf8.RuneSelf || utf8.ValidString(name)
}

// ValidElem reports whether name is one valid element of an io/fs path:
// fs.ValidPath(name), and neither "." nor holding a slash.
func ValidElem(name string) bool {
	var high byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '/' {
			return false
		}
		high |= c
	}
	return nameElem(name) && (high < utf8.RuneSelf || utf8.ValidString(name))
}

// nameElem reports whether e is an element that names an entry.
func nameElem(e string) bool {
	switch len(e) {
	case 0:
		return false
	case 1:
		return e[0] != '.'
	case 2:
		return e[0] != '.' || e[1] != '.'
	}
	return true
}

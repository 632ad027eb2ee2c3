package treap

import (
	"cmp"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"unsafe"
)

// orderedCompare returns cmp.Compare for K, or for string kinds a single
// three-way comparison (cmp.Compare on strings compares twice).
func orderedCompare[K cmp.Ordered]() func(a, b K) int {
	if reflect.TypeFor[K]().Kind() == reflect.String {
		return func(a, b K) int {
			// K's underlying type is string, so this reinterpretation is exact.
			return strings.Compare(*(*string)(unsafe.Pointer(&a)), *(*string)(unsafe.Pointer(&b)))
		}
	}
	return cmp.Compare[K]
}

// orderedHash returns a deterministic hash for K: no per-process seed, so
// a map's shape depends only on its keys.
func orderedHash[K cmp.Ordered]() func(K) uint64 {
	var zero K
	switch reflect.TypeFor[K]().Kind() {
	case reflect.String:
		return func(k K) uint64 { return hashString(*(*string)(unsafe.Pointer(&k))) }
	case reflect.Float32:
		return func(k K) uint64 { return hashFloat(float64(*(*float32)(unsafe.Pointer(&k)))) }
	case reflect.Float64:
		return func(k K) uint64 { return hashFloat(*(*float64)(unsafe.Pointer(&k))) }
	}
	// Integer kinds: the bits themselves; config.prio remixes them.
	switch unsafe.Sizeof(zero) {
	case 1:
		return func(k K) uint64 { return uint64(*(*uint8)(unsafe.Pointer(&k))) }
	case 2:
		return func(k K) uint64 { return uint64(*(*uint16)(unsafe.Pointer(&k))) }
	case 4:
		return func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k))) }
	default:
		return func(k K) uint64 { return *(*uint64)(unsafe.Pointer(&k)) }
	}
}

// hashFloat hashes f so that keys equal under cmp.Compare hash equally:
// -0 and +0 alike, and every NaN alike.
func hashFloat(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return 0x7ff8000000000001
	}
	return math.Float64bits(f)
}

const (
	k0 = 0xa0761d6478bd642f
	k1 = 0xe7037ed1a0b428db
	k2 = 0x8ebc6af09c88c6e3
)

// mum multiplies a and b to 128 bits and folds the halves.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hashString is a wyhash-style hash with a fixed seed.
func hashString(s string) uint64 {
	n := len(s)
	h := uint64(k0)
	for len(s) > 16 {
		h = mum(le64(s)^k1, le64(s[8:])^h)
		s = s[16:]
	}
	var a, b uint64
	switch {
	case len(s) >= 8:
		a, b = le64(s), le64(s[len(s)-8:])
	case len(s) >= 4:
		a, b = uint64(le32(s)), uint64(le32(s[len(s)-4:]))
	case len(s) > 0:
		a = uint64(s[0])<<16 | uint64(s[len(s)>>1])<<8 | uint64(s[len(s)-1])
	}
	return mum(k1^uint64(n), mum(a^k1, b^h^k2))
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

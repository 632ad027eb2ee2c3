package dirfs

import "sync/atomic"

// tmpSeq numbers temporary names so that concurrent whiteouts never collide.
var tmpSeq atomic.Uint64

// Package ocilayer converts between OCI image layer tars and PackFS upper
// layers.
//
// # Basics
//
// An OCI image layer is a tar archive of the changes one layer makes to the
// layers below it. A file named ".wh.NAME" deletes NAME of the lower layers;
// a file named ".wh..wh..opq" makes its directory opaque, so nothing of that
// directory in the lower layers shows through. PackFS spells the same things
// as entries of the upper layer: a whiteout is an entry of type
// [layer.ModeWhiteout], and an opaque directory holds a whiteout named
// [layer.OpaqueName] (see package layer).
//
// [Import] applies a layer tar, plain or gzip-compressed, to a writable
// layer ([layer.FS], such as a layer/mem FS), which can then serve as the
// upper layer of packfs.New or be written into a pack by packwriter, whose
// format keeps whiteouts and opaque directories. [Export] writes an upper
// layer (a layer/mem snapshot, a pack) back as a layer tar.
//
// Import follows the OCI image specification's rules for whiteouts: they
// apply to the lower layers only, so entries of the same tar survive an
// opaque marker of their directory, and a ".wh.NAME" whose NAME the same tar
// also holds does not delete it (if NAME is a directory, it is made opaque
// instead, since the lower directory is deleted). A directory created where
// dst held a whiteout is made opaque, as packfs does for Mkdir over a removed
// directory. An opaque marker also removes what dst held in its directory
// before the import, so importing a layer over an existing upper layer acts
// as stacking it. Names are cleaned as tar tools do: a leading "/" is
// dropped.
//
// # Caveats
//
//   - Import is not atomic: on an error, the entries applied so far stay in
//     dst. Import into a fresh layer and discard it on error if that
//     matters.
//   - Hard links are copied: layers need not support links, so each link
//     gets its own copy of the contents of the file it names, which must be
//     a regular file already in dst (normally an earlier entry of the tar).
//     So a tar of many links to one large file expands to many copies.
//   - Entries that PackFS cannot represent are errors wrapping [ErrInvalid],
//     never skipped silently: names with ".." that escape the root or with
//     NUL bytes; names and link targets longer than 4096 bytes (Linux's
//     PATH_MAX); block and character devices, except a 0/0 character
//     device, the overlayfs spelling of a whiteout, which is imported as
//     one; FIFOs; GNU sparse files, old or PAX format (archive/tar would
//     write out every hole, so a few bytes of tar could make terabytes;
//     image builders do not write them); entries below a file, a symlink
//     or a ".wh." name. The reserved aufs names ".wh..wh.*" other than the
//     opaque marker are skipped, as Docker does; PAX global headers are
//     ignored.
//   - Ownership, extended attributes and access times are not imported (a
//     layer does not keep them); symlink modification times are not set,
//     since layers have no Lchtimes. Directory modes and times are set
//     after the last entry, so that creating entries inside does not change
//     them.
//   - Import holds the set of names it created in memory, to tell this
//     tar's entries from dst's earlier ones. Nothing else may change dst
//     while Import runs.
//   - Export writes PAX headers (nanosecond modification times), uid and
//     gid 0 and no user or group names, and omits the root directory. A
//     name starting with ".wh." that is not a whiteout cannot be spelled in
//     a layer tar: Export fails with [ErrInvalid]. The
//     opaque marker of a directory comes right after the directory, other
//     entries in sorted order, so the output depends only on the tree.
package ocilayer

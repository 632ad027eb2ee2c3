package ocilayer

import "errors"

// ErrInvalid is wrapped by the errors of entries a layer tar may not hold or
// that PackFS cannot represent (see the package doc).
var ErrInvalid = errors.New("ocilayer: invalid layer entry")

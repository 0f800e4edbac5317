package image

import (
	"bufio"
	"compress/gzip"
	"io"
	"log/slog"

	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow bounds the memory a zstd layer may ask the decoder for:
// what zstd --long (2^27) takes, well above its levels' 8 MiB.
const zstdMaxWindow = 1 << 27

// unpacker applies an image's layers, in order, onto one root directory,
// and counts what they hold against the image's limits.
type unpacker struct {
	maxBytes, maxFiles int64
	bytes, files       int64
	op                 string
	log                *slog.Logger
	root               int // the root directory, opened
}

// decompress reads a layer as gzip, zstd or a plain tar, by its first
// bytes rather than by its media type, as Docker does.
func decompress(br *bufio.Reader) (io.Reader, func(), error) {
	magic, _ := br.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return z, func() { z.Close() }, nil
	case len(magic) == 4 && string(magic) == "\x28\xb5\x2f\xfd":
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, nil, err
		}
		return z, z.Close, nil
	}
	return br, func() {}, nil
}

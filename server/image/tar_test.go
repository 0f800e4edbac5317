package image

import (
	"testing"

	"github.com/bourse/bourse/internal/untar/untartest"
)

// The layers tests write, in untartest's words.
type ent = untartest.Entry

var (
	file     = untartest.File
	dir      = untartest.Dir
	symlink  = untartest.Symlink
	hardlink = untartest.Hardlink
	names    = untartest.Names
)

func tarOf(tb testing.TB, ents ...ent) []byte { return untartest.Tar(tb, ents...) }

package bourse_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// wallReads are the time package's functions that read or wait on the
// wall clock.
var wallReads = map[string]bool{
	"Now": true, "Since": true, "Until": true, "After": true, "Sleep": true,
	"NewTimer": true, "NewTicker": true, "Tick": true, "AfterFunc": true,
}

// TestNoWallClockBesideAClock: a package that takes a clock (declares a
// func() time.Time, or an interface with Now() time.Time) reads the
// wall clock nowhere in its code but where a line says why, with a
// "//wallclock: reason" comment on it or just above it: a default for a
// nil clock, a loop's pacing in an adapter, a run's real duration. A
// console whose sessions were judged by the wall clock beside a test's
// fixed clock failed the day after its tests were written; a House
// waiting on time.After never gave up on a manual clock. Test fixtures
// (packages named *test) are not production code and are left out.
func TestNoWallClockBesideAClock(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(p)] = append(pkgs[filepath.Dir(p)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for dir, files := range pkgs {
		if !takesClock(files) {
			continue
		}
		checked++
		for _, f := range files {
			allowed := map[int]bool{}
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if why, ok := strings.CutPrefix(c.Text, "//wallclock:"); ok && strings.TrimSpace(why) != "" {
						line := fset.Position(c.Pos()).Line
						allowed[line], allowed[line+1] = true, true
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if name, ok := timeFunc(f, call.Fun); ok && wallReads[name] {
					pos := fset.Position(call.Pos())
					if !allowed[pos.Line] {
						t.Errorf("%s: time.%s in package %s, which takes a clock: use the clock, or say why with //wallclock: on the line", pos, name, dir)
					}
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages take a clock: the check has lost its way", checked)
	}
}

// takesClock says whether a package's files declare a clock.
func takesClock(files []*ast.File) bool {
	found := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncType:
				if n.Params.NumFields() == 0 && n.Results.NumFields() == 1 && isTime(f, n.Results.List[0].Type) {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// isTime says whether e is time.Time.
func isTime(f *ast.File, e ast.Expr) bool {
	name, ok := timeFunc(f, e)
	return ok && name == "Time"
}

// timeFunc is the name of e if e is a selector on the file's import of
// package time.
func timeFunc(f *ast.File, e ast.Expr) (string, bool) {
	se, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := se.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	for _, im := range f.Imports {
		if im.Path.Value != `"time"` {
			continue
		}
		local := "time"
		if im.Name != nil {
			local = im.Name.Name
		}
		return se.Sel.Name, id.Name == local
	}
	return "", false
}

package leasehold_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootPackageIsUserAPI fails when the root package declares or
// re-exports a name of the driver service-provider interface: those live
// in package driver, so that a user's go doc shows only what a user calls.
func TestRootPackageIsUserAPI(t *testing.T) {
	driverNames := exportedTypes(t, "driver")
	if len(driverNames) < 10 {
		t.Fatalf("found %d exported types in package driver; the test reads the wrong directory", len(driverNames))
	}
	for name := range exportedTypes(t, ".") {
		if driverNames[name] {
			t.Errorf("root package exports %s, a type of the driver interface (package driver)", name)
		}
	}
}

// exportedTypes returns the exported type names declared in the non-test
// files of the package in dir.
func exportedTypes(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						names[ts.Name.Name] = true
					}
				}
			}
		}
	}
	return names
}

package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestOmittedJSONFieldsDocumented: a field of the JSON outputs that is left
// out when empty (omitempty) says so in its doc comment, or in the comment
// of the fields it is declared with, so that a script reading the stable
// formats knows which fields it may not find (every other list is [] and
// every other field always there).
func TestOmittedJSONFieldsDocumented(t *testing.T) {
	for _, dir := range []string{"savepoint", "transform", "diff"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					st, ok := ts.Type.(*ast.StructType)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					typeDoc := gd.Doc.Text() + ts.Doc.Text()
					var doc string // the comment of the fields declared together
					for _, field := range st.Fields.List {
						if field.Doc != nil {
							doc = field.Doc.Text()
						}
						if field.Tag == nil || len(field.Names) == 0 || !field.Names[0].IsExported() {
							continue
						}
						tag, err := strconv.Unquote(field.Tag.Value)
						if err != nil {
							t.Fatal(err)
						}
						name, opts, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
						if !strings.Contains(opts, "omitempty") {
							continue
						}
						text := doc + field.Comment.Text()
						if strings.Contains(typeDoc, field.Names[0].Name) {
							text += typeDoc
						}
						if !strings.Contains(text, "bsent") && !strings.Contains(text, "omitted") {
							t.Errorf("%s: %s.%s (%q) is left out of the JSON when empty, and its doc comment does not say so", fset.Position(field.Pos()), ts.Name.Name, field.Names[0].Name, name)
						}
					}
				}
			}
		}
	}
}

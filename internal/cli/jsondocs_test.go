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

// jsonField is a field of an exported struct type of the packages whose
// JSON forms are stable.
type jsonField struct {
	pos             token.Position
	typ, name, json string
	omitempty       bool
	list            bool   // a slice, other than bytes
	doc             string // its comment, that of the fields declared with it, and its type's when that names it
}

// jsonFields lists the JSON fields of the savepoint, transform and diff
// packages' exported struct types.
func jsonFields(t *testing.T) []jsonField {
	t.Helper()
	var out []jsonField
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
						if name == "" || name == "-" {
							continue
						}
						jf := jsonField{pos: fset.Position(field.Pos()), typ: ts.Name.Name, name: field.Names[0].Name, json: name,
							omitempty: strings.Contains(opts, "omitempty"), doc: doc + field.Comment.Text()}
						if at, ok := field.Type.(*ast.ArrayType); ok && at.Len == nil {
							id, ok := at.Elt.(*ast.Ident)
							jf.list = !ok || (id.Name != "byte" && id.Name != "uint8")
						}
						if strings.Contains(typeDoc, jf.name) {
							jf.doc += typeDoc
						}
						out = append(out, jf)
					}
				}
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("found %d JSON fields: the packages' sources were not read", len(out))
	}
	return out
}

// TestOmittedJSONFieldsDocumented: a field of the JSON outputs that is left
// out when empty (omitempty) says so in its doc comment, or in the comment
// of the fields it is declared with, so that a script reading the stable
// formats knows which fields it may not find (every other list is [] and
// every other field always there).
func TestOmittedJSONFieldsDocumented(t *testing.T) {
	for _, f := range jsonFields(t) {
		if f.omitempty && !strings.Contains(f.doc, "bsent") && !strings.Contains(f.doc, "omitted") {
			t.Errorf("%s: %s.%s (%q) is left out of the JSON when empty, and its doc comment does not say so", f.pos, f.typ, f.name, f.json)
		}
	}
}

// TestJSONListsNeverDocumentedNull: the commands write a list with no
// element as [] (writeJSON), so no list's doc comment may say it is null.
func TestJSONListsNeverDocumentedNull(t *testing.T) {
	for _, f := range jsonFields(t) {
		if f.list && !f.omitempty && strings.Contains(f.doc, "null") {
			t.Errorf("%s: %s.%s (%q) is a list, written [] when empty, but its doc comment says null", f.pos, f.typ, f.name, f.json)
		}
	}
}

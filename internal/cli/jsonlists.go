package cli

import (
	"reflect"
	"strings"
)

// emptyLists sets every nil slice reachable from v (through pointers,
// interfaces, struct fields, slice and array elements) whose struct field
// is not 'omitempty' to an empty one, so that a JSON list is [] when it
// has no element, never null: a reader iterating over it need not tell
// the two apart. v must be a pointer for its own fields to be set.
func emptyLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			emptyLists(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			fv := v.Field(i)
			if !f.IsExported() || !fv.CanSet() {
				continue
			}
			if fv.Kind() == reflect.Slice && fv.IsNil() {
				if tag := f.Tag.Get("json"); tag != "-" && !strings.Contains(tag, ",omitempty") && fv.Type().Elem().Kind() != reflect.Uint8 {
					fv.Set(reflect.MakeSlice(fv.Type(), 0, 0))
				}
				continue
			}
			emptyLists(fv)
		}
	case reflect.Slice, reflect.Array:
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Array:
		default:
			return // elements that hold no list (strings, numbers, bytes)
		}
		for i := range v.Len() {
			emptyLists(v.Index(i))
		}
	}
}

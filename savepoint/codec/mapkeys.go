package codec

import (
	"errors"
	"fmt"
)

// ErrRepeatedMapKey is what CheckMapKeys's errors wrap.
var ErrRepeatedMapKey = errors.New("a map holds a key once")

// CheckMapKeys returns an error if b, a value c decodes, holds a map (at
// any depth: a map's values, a list's elements, a pair's parts, an
// optional's value) with two entries whose keys encode to the same bytes.
// clink's MapState holds a key once, and so does every map it writes; but
// Decode accepts such a value, so that a stored one is read and written
// back as it is (Encode(Decode(b)) == b). A value built from a list of
// entries (concat(value, value)) may hold a key twice: a writer checks
// what it made with this. The error names the entries, counted from 0,
// and the path to the map.
func CheckMapKeys(c Codec, b []byte) error {
	cc, ok := c.(codec)
	if !ok || !holdsMap(cc.n) {
		return nil
	}
	v, err := cc.n.decode(b, 0)
	if err != nil {
		return fmt.Errorf("decode %s: %w", cc.n.String(), err)
	}
	return repeatedKey(cc.n, v, "")
}

// holdsMap reports whether n is a map or holds one.
func holdsMap(n node) bool {
	switch n := n.(type) {
	case mapNode:
		return true
	case listNode:
		return holdsMap(n.elem)
	case pairNode:
		return holdsMap(n.a) || holdsMap(n.b)
	case optionalNode:
		return holdsMap(n.inner)
	}
	return false
}

// repeatedKey walks v, a value n decoded, for a map holding a key twice;
// at is the path to v, for the error.
func repeatedKey(n node, v any, at string) error {
	if !holdsMap(n) || v == nil {
		return nil
	}
	switch n := n.(type) {
	case mapNode:
		entries, _ := v.([]any)
		seen := make(map[string]int, len(entries))
		for i, e := range entries {
			m, _ := e.(map[string]any)
			kb, err := n.key.encode(m["key"])
			if err != nil {
				return fmt.Errorf("%smap entry %d: %w", at, i, err)
			}
			if j, dup := seen[string(kb)]; dup {
				return fmt.Errorf("%smap entries %d and %d hold the key %v: %w", at, j, i, shown(m["key"]), ErrRepeatedMapKey)
			}
			seen[string(kb)] = i
			if err := repeatedKey(n.key, m["key"], fmt.Sprintf("%smap entry %d key: ", at, i)); err != nil {
				return err
			}
			if err := repeatedKey(n.val, m["value"], fmt.Sprintf("%smap entry %d value: ", at, i)); err != nil {
				return err
			}
		}
	case listNode:
		xs, _ := v.([]any)
		for i, x := range xs {
			if err := repeatedKey(n.elem, x, fmt.Sprintf("%slist element %d: ", at, i)); err != nil {
				return err
			}
		}
	case pairNode:
		xs, _ := v.([]any)
		if len(xs) != 2 {
			return nil
		}
		if err := repeatedKey(n.a, xs[0], at+"pair first: "); err != nil {
			return err
		}
		return repeatedKey(n.b, xs[1], at+"pair second: ")
	case optionalNode:
		return repeatedKey(n.inner, v, at)
	}
	return nil
}

// shown is a key as an error shows it: strings quoted.
func shown(k any) string {
	switch k := k.(type) {
	case string:
		return fmt.Sprintf("%q", k)
	case []byte:
		return fmt.Sprintf("%q", k)
	}
	return fmt.Sprint(k)
}

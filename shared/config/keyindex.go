package config

import (
	"slices"
	"sort"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyEntry is one key written in a TOML document: a key-value (including
// those inside inline tables) or a table header.
type keyEntry struct {
	path   []string
	offset int // of the key's first byte
	line   int // 1-based
	col    int // 1-based, in bytes
	table  bool
}

// keyIndex lists the keys of a document in document order, with their
// positions. It is built leniently: a syntax error ends the index early,
// and the decoder reports it.
type keyIndex struct {
	// complete is false when a syntax error stopped the index.
	complete   bool
	entries    []keyEntry
	lineStarts []int
	root       trieNode
}

// trieNode indexes the entries by key path, so that lookups cost the length
// of the path rather than the size of the document.
type trieNode struct {
	children map[string]*trieNode
	first    int // index of the first entry at or under this node, or -1
}

func (n *trieNode) child(part string, create bool) *trieNode {
	c := n.children[part]
	if c == nil && create {
		if n.children == nil {
			n.children = map[string]*trieNode{}
		}
		c = &trieNode{first: -1}
		n.children[part] = c
	}
	return c
}

// node returns the trie node of path, or nil.
func (ix *keyIndex) node(path []string) *trieNode {
	n := &ix.root
	for _, p := range path {
		if n = n.child(p, false); n == nil {
			return nil
		}
	}
	return n
}

func indexKeys(data []byte) *keyIndex {
	ix := &keyIndex{lineStarts: []int{0}, root: trieNode{first: -1}}
	for i, b := range data {
		if b == '\n' {
			ix.lineStarts = append(ix.lineStarts, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(e.Key())
			ix.add(&p, table, e.Key(), true)
		case unstable.KeyValue:
			ix.addKeyValue(&p, table, e)
		}
	}
	ix.complete = p.Error() == nil
	return ix
}

func (ix *keyIndex) addKeyValue(p *unstable.Parser, prefix []string, kv *unstable.Node) {
	parts := keyParts(kv.Key())
	path := append(slices.Clip(prefix), parts...)
	ix.add(p, path, kv.Key(), false)
	v := kv.Value()
	if v == nil || v.Kind != unstable.InlineTable {
		return
	}
	it := v.Children()
	for it.Next() {
		if c := it.Node(); c.Kind == unstable.KeyValue {
			ix.addKeyValue(p, path, c)
		}
	}
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func (ix *keyIndex) add(p *unstable.Parser, path []string, it unstable.Iterator, table bool) {
	off := -1
	if it.Next() {
		off = int(it.Node().Raw.Offset)
	}
	if off < 0 || off > len(p.Data()) {
		off = 0
	}
	line, col := ix.position(off)
	i := len(ix.entries)
	ix.entries = append(ix.entries, keyEntry{path: path, offset: off, line: line, col: col, table: table})
	n := &ix.root
	for _, part := range path {
		n = n.child(part, true)
		if n.first < 0 {
			n.first = i
		}
	}
}

// position converts a byte offset into a 1-based line and column.
func (ix *keyIndex) position(off int) (line, col int) {
	i := sort.Search(len(ix.lineStarts), func(i int) bool { return ix.lineStarts[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, off - ix.lineStarts[i] + 1
}

// offset converts a 1-based line and column into a byte offset, or -1.
func (ix *keyIndex) offset(line, col int) int {
	if line < 1 || line > len(ix.lineStarts) || col < 1 {
		return -1
	}
	return ix.lineStarts[line-1] + col - 1
}

// first returns the first entry whose path is path or starts with it.
func (ix *keyIndex) first(path ...string) (keyEntry, bool) {
	n := ix.node(path)
	if n == nil || n.first < 0 || len(path) == 0 {
		return keyEntry{}, false
	}
	return ix.entries[n.first], true
}

// has reports whether the document sets path or something under it.
func (ix *keyIndex) has(path ...string) bool {
	_, ok := ix.first(path...)
	return ok
}

// hasInner reports whether the document sets something strictly under
// path.
func (ix *keyIndex) hasInner(path []string) bool {
	n := ix.node(path)
	return n != nil && len(n.children) > 0
}

// before returns the last entry that starts at or before the byte offset
// off: the key an error at off belongs to. Entries are in document order,
// so their offsets increase.
func (ix *keyIndex) before(off int) (keyEntry, bool) {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].offset > off }) - 1
	if i < 0 {
		return keyEntry{}, false
	}
	return ix.entries[i], true
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

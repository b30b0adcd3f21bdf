package webfetch

import (
	"bytes"
	"strings"

	"github.com/JohannesKaufmann/dom"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxDepth bounds element nesting before conversion: the converter and
// the selector engine recurse per level, so a page of 2 MiB of "<div>"
// would otherwise nest 400,000 deep. Deeper elements are flattened into
// their text.
const maxDepth = 200

// maxElements bounds the elements converted to Markdown: the converter
// costs some microseconds and hundreds of bytes per element, so 2 MiB of
// "<p>x" (half a million paragraphs) would take seconds and hundreds of
// MiB. A real page of 2 MiB has a few tens of thousands; a document with
// more is reduced to its plain text.
const maxElements = 100_000

// tokenText is the text of an HTML document read token by token, for
// documents the tree parser refuses: the text of every element but
// scripts, styles and templates, with a line break at each block tag.
func tokenText(src []byte) string {
	z := html.NewTokenizer(bytes.NewReader(src))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tidy(b.String())
		case html.TextToken:
			if skip == 0 {
				b.WriteString(collapseSpace(string(z.Text())))
				b.WriteByte(' ')
			}
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if a == atom.Script || a == atom.Style || a == atom.Template || a == atom.Noscript {
				if z.Token().Type == html.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
				continue
			}
			if dom.NameIsBlockNode(string(name)) || a == atom.Br {
				b.WriteByte('\n')
			}
		}
	}
}

// Table bounds: the table renderer builds the full grid of cells, spans
// included, so a few bytes of colspan="99999" would make it allocate
// billions of cells. A table larger than this is rendered as plain text.
const (
	maxTableCells = 100_000
	maxTableCols  = 500
)

// guardTables turns tables whose grid would exceed the bounds into plain
// blocks (rows as paragraphs, cells separated by spaces).
func guardTables(tables *goquery.Selection) {
	tables.Each(func(_ int, t *goquery.Selection) {
		rows := t.ChildrenFiltered("tr").AddSelection(t.ChildrenFiltered("thead, tbody, tfoot").ChildrenFiltered("tr"))
		width, extra := 0, 0
		rows.Each(func(_ int, r *goquery.Selection) {
			w := 0
			r.ChildrenFiltered("td, th").Each(func(_ int, c *goquery.Selection) {
				w += spanAttr(c, "colspan")
				extra = max(extra, spanAttr(c, "rowspan"))
			})
			width = max(width, w)
		})
		if width <= maxTableCols && (rows.Length()+extra)*max(width, 1) <= maxTableCells {
			return
		}
		flattenTable(t.Get(0))
	})
}

func spanAttr(c *goquery.Selection, name string) int {
	v, ok := c.Attr(name)
	if !ok {
		return 1
	}
	n := 0
	for _, ch := range strings.TrimSpace(v) {
		if ch < '0' || ch > '9' {
			break
		}
		n = min(n*10+int(ch-'0'), 1<<20)
	}
	return max(n, 1)
}

// flattenTable renames the table's own elements so the converter sees
// blocks and spans instead of a table.
func flattenTable(t *html.Node) {
	stack := []*html.Node{t}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Table:
				if n != t {
					continue // a nested table is judged on its own
				}
				n.Data, n.DataAtom = "div", atom.Div
			case atom.Thead, atom.Tbody, atom.Tfoot, atom.Caption:
				n.Data, n.DataAtom = "div", atom.Div
			case atom.Tr:
				n.Data, n.DataAtom = "p", atom.P
			case atom.Td, atom.Th:
				n.Data, n.DataAtom = "span", atom.Span
				n.AppendChild(&html.Node{Type: html.TextNode, Data: " "})
			}
			n.Attr = nil
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
}

// flattenDeep replaces every element nested deeper than maxDepth by a
// text node holding its text, and returns the number of elements left and
// the tables (found on the way, to spare guardTables a search of the
// tree). It walks without recursion.
func flattenDeep(root *html.Node) (elements int, tables []*html.Node) {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{root, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			elements++
			if c.DataAtom == atom.Table {
				tables = append(tables, c)
			}
			if it.depth+1 >= maxDepth {
				text := textOf(c)
				for c.FirstChild != nil {
					c.RemoveChild(c.FirstChild)
				}
				c.AppendChild(&html.Node{Type: html.TextNode, Data: text})
				continue
			}
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return elements, tables
}

// textOf returns the text under n, without recursion.
func textOf(n *html.Node) string {
	var b strings.Builder
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteByte(' ')
			continue
		}
		if c.Type == html.ElementNode && (c.DataAtom == atom.Script || c.DataAtom == atom.Style) {
			continue
		}
		// Push children last-first so they pop in document order.
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
	}
	return b.String()
}

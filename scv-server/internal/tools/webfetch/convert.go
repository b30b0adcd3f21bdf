package webfetch

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/JohannesKaufmann/dom"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is a converted HTML document.
type page struct {
	Title string
	Text  string
}

// htmlConverter is safe for concurrent use: its per-conversion state lives
// in the conversion's context.
var htmlConverter = newConverter(pageRenderers{})

// newConverter returns the converter of web_fetch with the given plugin
// of our renderers. Escaping is off: the text is read by a model, not
// rendered, so "\[1\]" and "SIDE\_MODULE" would only be noise, and the
// escaper costs a lock per byte of text. So is the comment the commonmark
// plugin writes between two adjacent lists ("<!--THE END-->", which keeps
// a Markdown renderer from joining them): a reader sees two lists anyway.
func newConverter(r pageRenderers) *converter.Converter {
	return converter.NewConverter(
		converter.WithEscapeMode(converter.EscapeModeDisabled),
		converter.WithPlugins(
			base.NewBasePlugin(),
			commonmark.NewCommonmarkPlugin(
				commonmark.WithHeadingStyle(commonmark.HeadingStyleATX),
				commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
				commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
				commonmark.WithListEndComment(false),
			),
			table.NewTablePlugin(table.WithSpanCellBehavior(table.SpanBehaviorEmpty)),
			strikethrough.NewStrikethroughPlugin(),
			r,
		),
	)
}

// convertHTML turns an HTML document (UTF-8) into Markdown-like text. Links
// become numbered references, [text][n], listed at the end; relative links
// are resolved against base. It never fails: a page the converter cannot
// handle comes back as its plain text.
func convertHTML(src []byte, baseURL string) page {
	root, err := html.Parse(bytes.NewReader(src))
	if err != nil {
		// The parser refuses documents with more than 512 open elements;
		// their text still counts.
		return page{Text: tokenText(src)}
	}
	elements, tables := flattenDeep(root)
	if elements > maxElements {
		return page{Text: tokenText(src)}
	}
	doc := goquery.NewDocumentFromNode(root)
	guardTables(doc.FindNodes(tables...))
	var title string
	if t := firstElement(root, atom.Title, ""); t != nil {
		title = collapseSpace(goquery.NewDocumentFromNode(t).Text())
	}
	if b := firstElement(root, atom.Base, "href"); b != nil {
		href, _ := dom.GetAttribute(b, "href")
		// Relative links resolve against <base href>, itself relative to
		// the page's URL.
		if b, err := url.Parse(baseURL); err == nil {
			if r, err := b.Parse(strings.TrimSpace(href)); err == nil && (r.Scheme == "http" || r.Scheme == "https") {
				baseURL = r.String()
			}
		}
	}
	content := stripChrome(doc)
	unwrapInline(content)
	out, err := htmlConverter.ConvertNode(content, converter.WithDomain(baseURL))
	if err != nil {
		return page{Title: title, Text: tidy(textOf(content))}
	}
	return page{Title: title, Text: tidy(string(out))}
}

// transparentTags are inline elements the converter renders as their
// children alone; unwrapping them before conversion saves the converter's
// per-node cost (a Wikipedia page is one fifth spans).
var transparentTags = map[atom.Atom]bool{
	atom.Span: true, atom.Font: true, atom.Abbr: true, atom.Acronym: true, atom.Cite: true, atom.Small: true,
	atom.Big: true, atom.Sup: true, atom.Sub: true, atom.Time: true, atom.Mark: true, atom.U: true, atom.Ins: true,
	atom.Label: true, atom.Dfn: true, atom.Bdi: true, atom.Bdo: true, atom.Data: true, atom.Q: true, atom.Wbr: true,
}

// unwrapInline replaces the transparent elements under n by their
// children, drops comments, and reports whether n holds a block element.
// A span holding a block stays: the converter renders such a span as a
// block. It recurses, at most maxDepth deep (flattenDeep ran first).
func unwrapInline(n *html.Node) (hasBlock bool) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch c.Type {
		case html.CommentNode:
			n.RemoveChild(c)
		case html.ElementNode:
			inner := unwrapInline(c)
			hasBlock = hasBlock || inner || dom.NameIsBlockNode(c.Data)
			if transparentTags[c.DataAtom] && !(inner && c.DataAtom == atom.Span) {
				for k := c.FirstChild; k != nil; k = c.FirstChild {
					c.RemoveChild(k)
					n.InsertBefore(k, c)
				}
				n.RemoveChild(c)
			}
		}
		c = next
	}
	return hasBlock
}

// firstElement returns the first element (in document order) of type a
// having the attribute key (when key is not empty), or nil. It stops at
// the first match: the title and base sit early in the head.
func firstElement(root *html.Node, a atom.Atom, key string) *html.Node {
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode && n.DataAtom == a && (key == "" || hasAttr(n, key)) {
			return n
		}
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, c)
		}
	}
	return nil
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := dom.GetAttribute(n, key)
	return ok
}

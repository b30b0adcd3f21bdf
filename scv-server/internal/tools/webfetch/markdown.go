package webfetch

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/JohannesKaufmann/dom"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// pageRenderers is the converter plugin of web_fetch. It renders links as
// numbered references and images as their alt text: inline URLs would
// double the length of a link-heavy page, and an image's source (often a
// data: URL) is no use to a reader of text. It renders headings, because
// the commonmark plugin's heading renderer assumes escaping is on (it
// overwrites the byte before a closing "#"). And it renders lists and
// blocks of only text and links faster than the converter does, with the
// same output (see renderList, renderPlainBlock).
type pageRenderers struct {
	// converterOnly turns off the fast paths (lists, plain blocks), for
	// the tests that compare them with the converter's own rendering.
	converterOnly bool
}

const refsKey = "webfetch_refs"

// refList numbers the link targets of one conversion. abs caches the
// resolved URL of each raw href: pages repeat links, and resolving one
// parses two URLs.
type refList struct {
	urls  []string
	index map[string]int
	abs   map[string]string
}

func (pageRenderers) Name() string { return "webfetch" }

func (l pageRenderers) Init(conv *converter.Converter) error {
	conv.Register.PreRenderer(func(ctx converter.Context, _ *html.Node) {
		converter.SetState(ctx, refsKey, &refList{index: map[string]int{}, abs: map[string]string{}})
	}, converter.PriorityEarly)
	// No TagType for a and img: they are inline by default, and a
	// registered type costs a sort on every lookup.
	// One renderer for all our tags: the converter sorts its list of
	// renderers for every node it renders, so each one registered costs
	// time on every node.
	conv.Register.Renderer(l.render, converter.PriorityEarly)
	conv.Register.PostRenderer(l.appendRefs, converter.PriorityLate+50)
	return nil
}

func (l pageRenderers) render(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if n.Type != html.ElementNode {
		return converter.RenderTryNext
	}
	// By name, not atom: the commonmark pre-renderer renames elements
	// (a heading inside a link becomes "strong") without their atoms.
	switch n.Data {
	case "a":
		return l.renderLink(ctx, w, n)
	case "img":
		return l.renderImage(ctx, w, n)
	case "h1", "h2", "h3", "h4", "h5", "h6":
		return l.renderHeading(ctx, w, n)
	case "ul", "ol":
		if !l.converterOnly {
			return renderList(ctx, w, n)
		}
	case "p", "li", "div":
		if !l.converterOnly && onlyTextAndLinks(n) {
			return l.renderPlainBlock(ctx, w, n)
		}
	}
	return converter.RenderTryNext
}

func (pageRenderers) renderLink(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	href := strings.TrimSpace(dom.GetAttributeOr(n, "href", ""))
	// No "is_inside_link" value as the commonmark renderer sets: it only
	// tells its text transformer to escape "]", and escaping is off.
	inner := linkText(ctx, n)
	content := collapseSpace(inner)
	lower := strings.ToLower(href)
	if href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(lower, "javascript:") || strings.HasPrefix(lower, "data:") {
		w.WriteString(content)
		return converter.RenderSuccess
	}
	if content == "" {
		return converter.RenderSuccess
	}
	refs := converter.GetState[*refList](ctx, refsKey)
	abs, ok := refs.abs[href]
	if !ok {
		abs = ctx.AssembleAbsoluteURL(ctx, "a", href)
		refs.abs[href] = abs
	}
	num, ok := refs.index[abs]
	if !ok {
		refs.urls = append(refs.urls, abs)
		num = len(refs.urls)
		refs.index[abs] = num
	}
	before, after := surroundingSpace(inner)
	w.WriteString(before)
	w.WriteByte('[')
	w.WriteString(content)
	w.WriteString("][")
	w.WriteString(strconv.Itoa(num))
	w.WriteByte(']')
	w.WriteString(after)
	return converter.RenderSuccess
}

// textEntities is what the converter's text transformers do to text once
// escaping is off (tidy turns them back; the table renderer counts their
// width).
var textEntities = strings.NewReplacer("<", "&lt;", ">", "&gt;")

// linkText renders the content of the link n. Most links hold one text
// node, written without a trip through the converter.
func linkText(ctx converter.Context, n *html.Node) string {
	if c := n.FirstChild; c != nil && c.NextSibling == nil && c.Type == html.TextNode {
		return textEntities.Replace(c.Data)
	}
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx, &buf, n)
	return buf.String()
}

// onlyTextAndLinks reports whether n's children are all text or links.
func onlyTextAndLinks(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.TextNode && (c.Type != html.ElementNode || c.Data != "a") {
			return false
		}
	}
	return true
}

// renderPlainBlock renders a block holding only text and links as the
// converter would (a blank line either side), writing the text itself:
// the converter's cost per child (sorting its renderers and text
// transformers) is most of the cost of such a paragraph.
func (l pageRenderers) renderPlainBlock(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	w.WriteString("\n\n")
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			textEntities.WriteString(w, c.Data)
		} else {
			l.renderLink(ctx, w, c)
		}
	}
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

var altEscapes = strings.NewReplacer("[", `\[`, "]", `\]`)

func (pageRenderers) renderImage(_ converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	alt := collapseSpace(dom.GetAttributeOr(n, "alt", ""))
	if alt != "" {
		w.WriteString("[image: " + altEscapes.Replace(alt) + "]")
	}
	return converter.RenderSuccess
}

// renderHeading writes an ATX heading on one line, as the commonmark
// plugin does.
func (pageRenderers) renderHeading(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx, &buf, n)
	content := headingLine(buf.String())
	if content == "" {
		return converter.RenderSuccess
	}
	w.WriteString("\n\n")
	w.WriteString("######"[:n.Data[1]-'0'])
	w.WriteByte(' ')
	w.WriteString(content)
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// headingLine puts s on one line: line breaks become spaces, runs of
// spaces one space.
func headingLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' || c == '\r' {
			c = ' '
		}
		if c == ' ' && space {
			continue
		}
		space = c == ' '
		b.WriteByte(c)
	}
	return strings.TrimSpace(b.String())
}

func (pageRenderers) appendRefs(ctx converter.Context, content []byte) []byte {
	refs := converter.GetState[*refList](ctx, refsKey)
	if refs == nil || len(refs.urls) == 0 {
		return content
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(content, " \n"))
	b.WriteString("\n\n")
	for i, u := range refs.urls {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString("]: ")
		b.WriteString(u)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func surroundingSpace(s string) (before, after string) {
	if t := strings.TrimLeft(s, " \t\n"); len(t) < len(s) {
		before = " "
	}
	if t := strings.TrimRight(s, " \t\n"); len(t) < len(s) && strings.TrimSpace(s) != "" {
		after = " "
	}
	return before, after
}

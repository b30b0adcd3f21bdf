package webfetch

import (
	"bytes"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

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

// page is a converted HTML document.
type page struct {
	Title string
	Text  string
}

// chromeTags are elements a reader skips: scripts and styles, navigation,
// form controls, embedded objects and dialogs.
var chromeTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Canvas: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Nav: true,
	atom.Aside: true, atom.Menu: true, atom.Dialog: true, atom.Button: true, atom.Select: true,
	atom.Input: true, atom.Textarea: true, atom.Option: true, atom.Datalist: true,
}

// chromeRoles are ARIA roles of page chrome.
var chromeRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true, "search": true,
	"dialog": true, "menu": true, "menubar": true, "toolbar": true,
}

// chromeWords are class or id words (whole names, or parts between - and
// _) that name page chrome; chromeNames are whole names with the
// separators removed.
var (
	chromeWords = map[string]bool{
		"nav": true, "navbar": true, "navigation": true, "menu": true, "breadcrumb": true, "breadcrumbs": true,
		"sidebar": true, "cookie": true, "cookies": true, "consent": true, "advert": true, "advertisement": true,
		"ads": true, "social": true, "share": true, "sharing": true, "newsletter": true, "promo": true, "masthead": true,
		"related": true, "recommended": true, "outbrain": true, "taboola": true, "sponsored": true,
	}
	chromeNames = map[string]bool{
		"skiplink": true, "siteheader": true, "sitefooter": true, "globalheader": true, "globalfooter": true,
	}
)

// chromeAttr reports whether a class or id value names page chrome. It
// runs for every element with a class, so it lowercases into a stack
// buffer instead of allocating (map lookups with string(bytes) do not
// allocate).
func chromeAttr(v string) bool {
	var lower, joined [64]byte
	for len(v) > 0 {
		// Next whitespace-separated name.
		i := 0
		for i < len(v) && isSpaceByte(v[i]) {
			i++
		}
		v = v[i:]
		j := 0
		for j < len(v) && !isSpaceByte(v[j]) {
			j++
		}
		name := v[:j]
		v = v[j:]
		if name == "" {
			continue
		}
		if len(name) > len(lower) {
			if chromeName(name) {
				return true
			}
			continue
		}
		l := lower[:len(name)]
		jn := joined[:0]
		for k := 0; k < len(name); k++ {
			c := name[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			l[k] = c
			if c != '-' && c != '_' {
				jn = append(jn, c)
			}
		}
		if chromeWords[string(l)] || chromeNames[string(jn)] {
			return true
		}
		// The parts between - and _.
		start := 0
		for k := 0; k <= len(l); k++ {
			if k == len(l) || l[k] == '-' || l[k] == '_' {
				if k > start && chromeWords[string(l[start:k])] {
					return true
				}
				start = k + 1
			}
		}
	}
	return false
}

var separators = strings.NewReplacer("-", "", "_", "")

// chromeName is chromeAttr for one name, allocating: for names longer
// than its buffer. Case folds in ASCII only, as HTML class matching does.
func chromeName(name string) bool {
	name = strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
	if chromeWords[name] || chromeNames[separators.Replace(name)] {
		return true
	}
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' }) {
		if chromeWords[w] {
			return true
		}
	}
	return false
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// hiddenStyle matches inline styles that hide an element.
var hiddenStyle = regexp.MustCompile(`(?i)display\s*:\s*none|visibility\s*:\s*hidden`)

// htmlConverter is safe for concurrent use: its per-conversion state lives
// in the conversion's context. Escaping is off: the text is read by a
// model, not rendered, so "\[1\]" and "SIDE\_MODULE" would only be noise,
// and the escaper costs a lock per byte of text.
var htmlConverter = converter.NewConverter(
	converter.WithEscapeMode(converter.EscapeModeDisabled),
	converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithHeadingStyle(commonmark.HeadingStyleATX),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(table.WithSpanCellBehavior(table.SpanBehaviorEmpty)),
		strikethrough.NewStrikethroughPlugin(),
		pageRenderers{},
	),
)

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

// stripChrome removes page chrome and returns the node to convert: the
// page's only <main> (or role=main), else its only <article>, else the
// body.
func stripChrome(doc *goquery.Document) *html.Node {
	root := doc.Get(0)
	var mains, articles []*html.Node
	var body *html.Node
	var remove []*html.Node
	// One walk over the tree (at most maxDepth deep) decides what goes.
	var walk func(n *html.Node, inSection bool)
	walk = func(n *html.Node, inSection bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if isChrome(c, inSection) {
				remove = append(remove, c)
				continue
			}
			role := attr(c, "role")
			switch {
			case c.DataAtom == atom.Main || role == "main":
				mains = append(mains, c)
			case c.DataAtom == atom.Article:
				articles = append(articles, c)
			case c.DataAtom == atom.Body && body == nil:
				body = c
			}
			walk(c, inSection || c.DataAtom == atom.Article || c.DataAtom == atom.Main || c.DataAtom == atom.Section || role == "main")
		}
	}
	walk(root, false)
	for _, n := range remove {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
	for _, cand := range [][]*html.Node{mains, articles} {
		if len(cand) == 1 && hasText(cand[0]) {
			return cand[0]
		}
	}
	if body != nil {
		return body
	}
	return root
}

// isChrome decides whether the element n is page chrome. inSection tells
// whether n sits in sectioning content (article, main, section).
func isChrome(n *html.Node, inSection bool) bool {
	if chromeTags[n.DataAtom] {
		return true
	}
	switch n.DataAtom {
	case atom.Header, atom.Footer:
		// A header or footer belongs to the page (a banner) unless it
		// sits in sectioning content, where it holds the article's own
		// title or notes.
		if !inSection {
			return true
		}
	case atom.Form:
		// A form is chrome (search, sign-up, comments) unless it wraps
		// the content, as ASP.NET pages wrap the whole page in one.
		if !contains(n, atom.Main, atom.Article, atom.H1, atom.H2, atom.P) {
			return true
		}
	}
	var cls, id string
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(a.Val), "true") {
				return true
			}
		case "role":
			if chromeRoles[strings.ToLower(strings.TrimSpace(a.Val))] {
				return true
			}
		case "style":
			if hiddenStyle.MatchString(a.Val) {
				return true
			}
		case "class":
			cls = a.Val
		case "id":
			id = a.Val
		}
	}
	switch n.DataAtom {
	case atom.Html, atom.Body, atom.Main, atom.Article:
		return false
	}
	if (cls != "" && chromeAttr(cls) || id != "" && chromeAttr(id)) && !contains(n, atom.Main, atom.Article, atom.H1) {
		return true
	}
	return false
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

// hasText reports whether n holds any non-space text.
func hasText(n *html.Node) bool {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
			return true
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			stack = append(stack, k)
		}
	}
	return false
}

// contains reports whether an element below n is one of tags (or has
// role=main when tags include main).
func contains(n *html.Node, tags ...atom.Atom) bool {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			if k.Type != html.ElementNode {
				continue
			}
			for _, t := range tags {
				if k.DataAtom == t || t == atom.Main && attr(k, "role") == "main" {
					return true
				}
			}
			stack = append(stack, k)
		}
	}
	return false
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := dom.GetAttribute(n, key)
	return ok
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.ToLower(strings.TrimSpace(a.Val))
		}
	}
	return ""
}

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

// entities undoes the converter's escaping of < and >, which is for
// Markdown renderers, not for a reader of the text.
var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">")

// tidy trims trailing spaces and tabs from lines, keeps at most one blank
// line in a row, and trims the text, in one pass over its lines.
func tidy(s string) string {
	s = entities.Replace(validText(s))
	var b strings.Builder
	b.Grow(len(s) + 1)
	blank, started := false, false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			blank = started
			continue
		}
		if started {
			b.WriteByte('\n')
			if blank {
				b.WriteByte('\n')
			}
		}
		b.WriteString(line)
		blank, started = false, true
	}
	return strings.TrimSpace(b.String()) + "\n"
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// validText replaces invalid UTF-8 and NUL characters.
func validText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

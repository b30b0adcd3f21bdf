package webfetch

import (
	"bytes"
	"fmt"
	"regexp"
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

// maxDepth bounds element nesting before conversion: the converter and
// the selector engine recurse per level, so a page of 2 MiB of "<div>"
// would otherwise nest 400,000 deep. Deeper elements are flattened into
// their text.
const maxDepth = 200

// page is a converted HTML document.
type page struct {
	Title string
	Text  string
}

// chrome is what a reader skips: scripts and styles, navigation, forms'
// controls, embedded objects and dialogs.
const chrome = "script, style, noscript, template, svg, canvas, iframe, object, embed, " +
	"nav, aside, menu, dialog, button, select, input, textarea, option, datalist, " +
	"[hidden], [aria-hidden=true], [role=navigation], [role=banner], [role=contentinfo], " +
	"[role=complementary], [role=search], [role=dialog], [role=menu], [role=menubar], [role=toolbar]"

// chromeClass matches class and id tokens that name page chrome.
var chromeClass = regexp.MustCompile(`(?i)(^|[\s_-])(nav|navbar|navigation|menu|breadcrumbs?|sidebar|cookies?|consent|advert|advertisement|ads|social|share|sharing|newsletter|promo|skip-?link|site-?header|site-?footer|masthead|global-?header|global-?footer)($|[\s_-])`)

// hiddenStyle matches inline styles that hide an element.
var hiddenStyle = regexp.MustCompile(`(?i)display\s*:\s*none|visibility\s*:\s*hidden`)

// htmlConverter is safe for concurrent use: its per-conversion state lives
// in the conversion's context.
var htmlConverter = converter.NewConverter(
	converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithHeadingStyle(commonmark.HeadingStyleATX),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(table.WithSpanCellBehavior(table.SpanBehaviorEmpty)),
		strikethrough.NewStrikethroughPlugin(),
		linkRefs{},
	),
)

// convertHTML turns an HTML document (UTF-8) into Markdown-like text. Links
// become numbered references, [text][n], listed at the end; relative links
// are resolved against base. It never fails: a page the converter cannot
// handle comes back as its plain text.
func convertHTML(src []byte, baseURL string) page {
	root, err := html.Parse(bytes.NewReader(src))
	if err != nil {
		// html.Parse fails only on reader errors; a bytes.Reader has none.
		return page{Text: validText(string(src))}
	}
	flattenDeep(root)
	doc := goquery.NewDocumentFromNode(root)
	title := collapseSpace(doc.Find("title").First().Text())
	content := stripChrome(doc)
	out, err := htmlConverter.ConvertNode(content, converter.WithDomain(baseURL))
	if err != nil {
		return page{Title: title, Text: validText(collapseSpace(goquery.NewDocumentFromNode(content).Text()))}
	}
	return page{Title: title, Text: tidy(string(out))}
}

// stripChrome removes page chrome and returns the node to convert: the
// page's only <main> (or role=main), else its only <article>, else the
// body.
func stripChrome(doc *goquery.Document) *html.Node {
	doc.Find(chrome).Remove()
	// A header or footer belongs to the page (a banner) unless it sits in
	// sectioning content, where it holds the article's own title or notes.
	doc.Find("header, footer").Each(func(_ int, s *goquery.Selection) {
		if s.ParentsFiltered("article, main, section, [role=main]").Length() == 0 {
			s.Remove()
		}
	})
	// A form is chrome (search, sign-up, comments) unless it wraps the
	// content, as ASP.NET pages wrap the whole page in one.
	doc.Find("form").Each(func(_ int, s *goquery.Selection) {
		if s.Find("main, article, h1, h2, p").Length() == 0 {
			s.Remove()
		}
	})
	doc.Find("[style]").Each(func(_ int, s *goquery.Selection) {
		if st, _ := s.Attr("style"); hiddenStyle.MatchString(st) {
			s.Remove()
		}
	})
	doc.Find("[class], [id]").Each(func(_ int, s *goquery.Selection) {
		switch goquery.NodeName(s) {
		case "html", "body", "main", "article":
			return
		}
		cls, _ := s.Attr("class")
		id, _ := s.Attr("id")
		if !chromeClass.MatchString(cls) && !chromeClass.MatchString(id) {
			return
		}
		if s.Find("main, article, [role=main], h1").Length() > 0 {
			return
		}
		s.Remove()
	})
	for _, sel := range []string{"main, [role=main]", "article"} {
		if m := doc.Find(sel); m.Length() == 1 && len(strings.TrimSpace(m.Text())) > 0 {
			return m.Get(0)
		}
	}
	if b := doc.Find("body"); b.Length() > 0 {
		return b.Get(0)
	}
	return doc.Get(0)
}

// flattenDeep replaces every element nested deeper than maxDepth by a
// text node holding its text. It walks without recursion.
func flattenDeep(root *html.Node) {
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

// linkRefs renders links as numbered references and images as their alt
// text: inline URLs would double the length of a link-heavy page, and an
// image's source (often a data: URL) is no use to a reader of text.
type linkRefs struct{}

const refsKey = "webfetch_refs"

type refList struct {
	urls  []string
	index map[string]int
}

func (linkRefs) Name() string { return "webfetch-link-references" }

func (l linkRefs) Init(conv *converter.Converter) error {
	conv.Register.PreRenderer(func(ctx converter.Context, _ *html.Node) {
		converter.SetState(ctx, refsKey, &refList{index: map[string]int{}})
	}, converter.PriorityEarly)
	conv.Register.RendererFor("a", converter.TagTypeInline, l.renderLink, converter.PriorityEarly)
	conv.Register.RendererFor("img", converter.TagTypeInline, l.renderImage, converter.PriorityEarly)
	conv.Register.PostRenderer(l.appendRefs, converter.PriorityLate+50)
	return nil
}

func (linkRefs) renderLink(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	href := strings.TrimSpace(dom.GetAttributeOr(n, "href", ""))
	var buf bytes.Buffer
	ctx = ctx.WithValue("is_inside_link", true)
	ctx.RenderChildNodes(ctx, &buf, n)
	content := strings.TrimSpace(strings.Join(strings.Fields(buf.String()), " "))
	lower := strings.ToLower(href)
	if href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(lower, "javascript:") || strings.HasPrefix(lower, "data:") {
		w.WriteString(content)
		return converter.RenderSuccess
	}
	abs := ctx.AssembleAbsoluteURL(ctx, "a", href)
	if content == "" {
		return converter.RenderSuccess
	}
	refs := converter.GetState[*refList](ctx, refsKey)
	num, ok := refs.index[abs]
	if !ok {
		refs.urls = append(refs.urls, abs)
		num = len(refs.urls)
		refs.index[abs] = num
	}
	before, after := surroundingSpace(buf.String())
	w.WriteString(before)
	fmt.Fprintf(w, "[%s][%d]", content, num)
	w.WriteString(after)
	return converter.RenderSuccess
}

func (linkRefs) renderImage(_ converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	alt := strings.Join(strings.Fields(dom.GetAttributeOr(n, "alt", "")), " ")
	if alt != "" {
		alt = strings.NewReplacer("[", `\[`, "]", `\]`).Replace(alt)
		w.WriteString("[image: " + alt + "]")
	}
	return converter.RenderSuccess
}

func (linkRefs) appendRefs(ctx converter.Context, content []byte) []byte {
	refs := converter.GetState[*refList](ctx, refsKey)
	if refs == nil || len(refs.urls) == 0 {
		return content
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(content, " \n"))
	b.WriteString("\n\n")
	for i, u := range refs.urls {
		fmt.Fprintf(&b, "[%d]: %s\n", i+1, u)
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

var blankRuns = regexp.MustCompile(`\n{3,}`)

// entities undoes the converter's escaping of < and >, which is for
// Markdown renderers, not for a reader of the text.
var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">")

// tidy trims trailing spaces and runs of blank lines.
func tidy(s string) string {
	s = entities.Replace(validText(s))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	s = blankRuns.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s) + "\n"
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// validText replaces invalid UTF-8 and NUL characters.
func validText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

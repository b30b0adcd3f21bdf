package webfetch

import (
	"regexp"
	"strings"

	"github.com/JohannesKaufmann/dom"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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

// chromeLevel is how surely a class or id names page chrome.
type chromeLevel uint8

const (
	notChrome chromeLevel = iota
	// weakChrome words also name real content (a section on the sharing
	// economy, a paper's related work, a recipe's menu): an element named
	// so goes unless it holds content (see holdsContent).
	weakChrome
	// strongChrome words name nothing a reader wants (ads, cookie
	// banners, tracking widgets, breadcrumbs).
	strongChrome
)

// chromeWords are class or id words (whole names, or parts between - and
// _, compared in lower case) that name page chrome; chromeNames are whole
// names with the separators removed.
var (
	chromeWords = map[string]chromeLevel{
		"ad": strongChrome, "ads": strongChrome, "advert": strongChrome, "advertisement": strongChrome,
		"sponsored": strongChrome, "outbrain": strongChrome, "taboola": strongChrome,
		"cookie": strongChrome, "cookies": strongChrome, "consent": strongChrome, "gdpr": strongChrome,
		"breadcrumb": strongChrome, "breadcrumbs": strongChrome, "masthead": strongChrome,

		"nav": weakChrome, "navbar": weakChrome, "navigation": weakChrome, "menu": weakChrome, "sidebar": weakChrome,
		"social": weakChrome, "share": weakChrome, "sharing": weakChrome, "newsletter": weakChrome, "promo": weakChrome,
		"related": weakChrome, "recommended": weakChrome,
		// Compounds written as one word (or in camelCase, which folds to
		// one): WordPress's sharedaddy and relatedposts, and their like.
		"relatedposts": weakChrome, "relatedarticles": weakChrome, "relatedstories": weakChrome, "relatedlinks": weakChrome,
		"relatedcontent": weakChrome, "sharedaddy": weakChrome, "sharebar": weakChrome, "sharebuttons": weakChrome,
		"sharetools": weakChrome, "socialshare": weakChrome, "sociallinks": weakChrome, "socialicons": weakChrome,
	}
	chromeNames = map[string]chromeLevel{
		"skiplink": strongChrome, "siteheader": strongChrome, "sitefooter": strongChrome, "globalheader": strongChrome,
		"globalfooter": strongChrome,
	}
)

// chromeAttr returns how surely a class or id value names page chrome:
// the highest level of its names and their parts. It runs for every
// element with a class, so it lowercases into a stack buffer instead of
// allocating (map lookups with string(bytes) do not allocate).
func chromeAttr(v string) chromeLevel {
	var lower, joined [64]byte
	level := notChrome
	for len(v) > 0 && level < strongChrome {
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
			level = max(level, chromeName(name))
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
		level = max(level, chromeWords[string(l)], chromeNames[string(jn)])
		// The parts between - and _.
		start := 0
		for k := 0; k <= len(l); k++ {
			if k == len(l) || l[k] == '-' || l[k] == '_' {
				if k > start {
					level = max(level, chromeWords[string(l[start:k])])
				}
				start = k + 1
			}
		}
	}
	return level
}

var separators = strings.NewReplacer("-", "", "_", "")

// chromeName is chromeAttr for one name, allocating: for names longer
// than its buffer. Case folds in ASCII only, as HTML class matching does.
func chromeName(name string) chromeLevel {
	name = strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
	level := max(chromeWords[name], chromeNames[separators.Replace(name)])
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' }) {
		level = max(level, chromeWords[w])
	}
	return level
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// hiddenStyle matches inline styles that hide an element.
var hiddenStyle = regexp.MustCompile(`(?i)display\s*:\s*none|visibility\s*:\s*hidden`)

// stripChrome removes page chrome and returns the node to convert: the
// page's only <main> (or role=main), else its only <article>, else the
// body.
func stripChrome(doc *goquery.Document) *html.Node {
	root := doc.Get(0)
	var mains, articles []*html.Node
	var body *html.Node
	var remove []*html.Node
	holders := mainHolders(root)
	// One walk over the tree (at most maxDepth deep) decides what goes.
	var walk func(n *html.Node, inSection bool)
	walk = func(n *html.Node, inSection bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if isChrome(c, inSection, holders) {
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

// mainHolders returns the elements that hold a main, an article (or
// role=main) or an h1: the page's own content, which no class or id
// makes chrome. It marks the ancestors of each such element once, so
// asking costs nothing per element, however deep chrome-named elements
// nest.
func mainHolders(root *html.Node) map[*html.Node]bool {
	holders := map[*html.Node]bool{}
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode && (n.DataAtom == atom.Main || n.DataAtom == atom.Article || n.DataAtom == atom.H1 || attr(n, "role") == "main") {
			for p := n.Parent; p != nil && !holders[p]; p = p.Parent {
				holders[p] = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
	return holders
}

// isChrome decides whether the element n is page chrome. inSection tells
// whether n sits in sectioning content (article, main, section); holders
// are the elements that hold the page's main content (mainHolders).
func isChrome(n *html.Node, inSection bool, holders map[*html.Node]bool) bool {
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
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Code:
		// A heading's id is its text made a slug ("related-work",
		// "navigation"); a code block's class names its language.
		return false
	}
	level := notChrome
	if cls != "" {
		level = chromeAttr(cls)
	}
	if id != "" && level < strongChrome {
		level = max(level, chromeAttr(id))
	}
	switch {
	case level == notChrome, holders[n]:
		return false
	case level == weakChrome:
		return !holdsContent(n, id)
	}
	return true
}

// Content tests for an element whose class or id names chrome weakly.
const (
	// proseWords, proseParagraph and proseLinkShare make "substantial
	// prose": this many words in all, one paragraph (text in one block
	// element) of proseParagraph words outside links, and at most
	// proseLinkShare of the words in links. A share bar, a list of
	// related links or a newsletter box has fewer words, shorter blocks
	// (a related post's teaser), or mostly links.
	proseWords     = 80
	proseParagraph = 40
	proseLinkShare = 0.25
	// sectionLinkShare bounds the links of a document section (an
	// element whose id is its heading's slug).
	sectionLinkShare = 0.5
	// proseNodes bounds the nodes read to decide: enough for any real
	// section, and what keeps an adversarial page of nested "menu"
	// elements linear.
	proseNodes = 5000
)

// holdsContent reports whether n, whose class or id names chrome weakly,
// holds content a reader wants: substantial prose, or a section of the
// document (its id is the slug of its first heading, as documentation
// generators write them: <section id="menu-configuration"><h2>Menu
// configuration</h2>) that is not a list of links.
func holdsContent(n *html.Node, id string) bool {
	var st textStats
	st.walk(n, false, nil)
	if st.words == 0 {
		return false
	}
	share := float64(st.linked) / float64(st.words)
	if st.words >= proseWords && st.longest >= proseParagraph && share <= proseLinkShare {
		return true
	}
	if id != "" && share <= sectionLinkShare {
		if h := leadingHeading(n); h != nil && slug(textOf(h)) == slug(id) {
			return true
		}
	}
	return false
}

// textStats counts the words under an element.
type textStats struct {
	words   int // every word
	linked  int // words inside links
	longest int // the most words outside links in one block element
	nodes   int
}

// walk counts the words under n; block is the count of the innermost
// block element holding n.
func (s *textStats) walk(n *html.Node, inLink bool, block *int) {
	if s.nodes++; s.nodes > proseNodes {
		return
	}
	switch n.Type {
	case html.TextNode:
		w := countWords(n.Data)
		s.words += w
		if inLink {
			s.linked += w
		} else if block != nil {
			*block += w
			s.longest = max(s.longest, *block)
		}
		return
	case html.ElementNode:
		switch n.DataAtom {
		case atom.Script, atom.Style, atom.Template, atom.Noscript:
			return
		case atom.A:
			inLink = true
		}
		if dom.NameIsBlockNode(n.Data) {
			var own int
			block = &own
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		s.walk(c, inLink, block)
	}
}

// countWords counts the runs of non-space bytes in s.
func countWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); i++ {
		sp := isSpaceByte(s[i])
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// leadingHeading returns n's first element child when it is a heading.
func leadingHeading(n *html.Node) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "", c.Type == html.CommentNode:
			continue
		case c.Type != html.ElementNode:
			return nil
		}
		switch c.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			return c
		}
		return nil
	}
	return nil
}

// slug lowercases s and turns every run of characters other than ASCII
// letters and digits into one "-", trimmed at both ends, as documentation
// generators make ids from headings ("Menu configuration¶" and
// "menu_configuration" are both "menu-configuration").
func slug(s string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteByte(c)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
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

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.ToLower(strings.TrimSpace(a.Val))
		}
	}
	return ""
}

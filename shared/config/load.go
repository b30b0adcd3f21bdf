package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// Environment variables Load reads.
const (
	// EnvModel overrides the model of the active provider.
	EnvModel = "SCV_MODEL"
	// EnvApprovalPolicy overrides tools.approval_policy.
	EnvApprovalPolicy = "SCV_APPROVAL_POLICY"
	// EnvOpenAIKey, when set and no provider is configured, enables the
	// implicit provider "openai".
	EnvOpenAIKey = "OPENAI_API_KEY"
	// EnvOpenAIBaseURL is the base URL of the implicit provider.
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
)

// ImplicitProvider is the name of the provider OPENAI_API_KEY enables when
// the user file configures none.
const ImplicitProvider = "openai"

// DocsRef is where error messages send people for the list of keys.
const DocsRef = "docs/configuration.md"

// MaxFileSize is the largest configuration file Load reads.
const MaxFileSize = 256 << 10

// maxReported bounds the unknown keys reported for one file.
const maxReported = 20

// LoadOptions says where Load finds the configuration.
type LoadOptions struct {
	// Home is the instance directory (see paths.Home); Load reads
	// Home/config.toml. Required, absolute.
	Home string
	// Workspace is the session's workspace; Load reads
	// Workspace/.scv/config.toml. Empty for none; otherwise absolute.
	Workspace string
	// Env is the environment; nil means paths.OSEnv().
	Env paths.Env
}

// projectFile is what a project file may set. Tables of Config listed here
// with their Config type are merged; tables listed with type any are the
// forbidden ones (spec decision 6), decoded only so that they are not
// unknown keys: setting them is a warning and their content is ignored. Any
// other key is an unknown key.
type projectFile struct {
	Tools  ToolsConfig  `toml:"tools"`
	Skills SkillsConfig `toml:"skills"`

	Provider    any `toml:"provider"`
	Providers   any `toml:"providers"`
	Agent       any `toml:"agent"`
	Agents      any `toml:"agents"`
	Web         any `toml:"web"`
	Daemon      any `toml:"daemon"`
	Channels    any `toml:"channels"`
	Credentials any `toml:"credentials"`
	MCPServers  any `toml:"mcp_servers"`
}

// projectForbiddenRoots are the forbidden tables of projectFile.
var projectForbiddenRoots = func() []string {
	var roots []string
	t := reflect.TypeFor[projectFile]()
	for _, f := range schemaOf(t).fields {
		if t.Field(f.index).Type.Kind() == reflect.Interface {
			roots = append(roots, f.name)
		}
	}
	return roots
}()

// layer is one configuration file being loaded.
type layer struct {
	kind SourceKind
	file string
	data []byte
	mode fs.FileMode
	ix   *keyIndex
	// rejected holds the keys whose values had the wrong type: left out
	// of the merge, and of validation.
	rejected map[string]bool
}

type loader struct {
	cfg   *Config
	env   paths.Env
	diags []Diagnostic
	user  *layer // nil when there is no user file, or it could not be read
	// rejected is the union of the layers' rejected keys.
	rejected map[string]bool
}

// Load reads the user file Home/config.toml and, when Workspace is set, the
// project file Workspace/.scv/config.toml, and merges defaults, user file,
// project file (only [tools] options) and environment overrides, in that
// order. A missing file is not an error.
//
// Problems that make the configuration unusable (TOML syntax, unknown keys,
// wrong types, out-of-range values, an active provider that does not exist)
// are returned as an error naming the file, line and key: one *Error, or
// several joined, all of them in one pass, ordered by file and line. Only
// a file that is not TOML (a syntax error, a key defined twice) hides the
// rest of its own problems; the other files and the environment are still
// checked. Warnings, such as keys a project file may not set, are returned
// as Diagnostics; Load never logs.
func Load(opts LoadOptions) (*Config, []Diagnostic, error) {
	env := opts.Env
	if env == nil {
		env = paths.OSEnv()
	}
	if opts.Home == "" {
		return nil, nil, errors.New("config: LoadOptions.Home is empty; pass the instance directory from paths.Home")
	}
	if !filepath.IsAbs(opts.Home) {
		return nil, nil, fmt.Errorf("config: the instance directory %q is not an absolute path", opts.Home)
	}
	if opts.Workspace != "" && !filepath.IsAbs(opts.Workspace) {
		return nil, nil, fmt.Errorf("config: the workspace %q is not an absolute path", opts.Workspace)
	}
	l := &loader{cfg: Defaults(), env: env, rejected: map[string]bool{}}
	var errs []error

	userPath := paths.ConfigFile(opts.Home)
	user, err := readLayer(SourceUser, opts.Home, paths.ConfigFileName, statefile.AnyLinks)
	if err != nil {
		errs = append(errs, err)
	}
	if user != nil {
		errs = append(errs, l.applyUser(user)...)
	}

	if opts.Workspace != "" {
		projPath := paths.ProjectConfigFile(opts.Workspace)
		// With the workspace at the user's home directory, the project file
		// is the user file: read it once, as the user file.
		if !sameFile(projPath, userPath) {
			rel, _ := filepath.Rel(opts.Workspace, projPath)
			proj, err := readLayer(SourceProject, opts.Workspace, rel, statefile.LinksInside)
			if err != nil {
				errs = append(errs, err)
			}
			if proj != nil {
				errs = append(errs, l.applyProject(proj)...)
			}
		}
	}

	if err := l.resolveProvider(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, l.validate()...)
	if err := l.applyEnv(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, l.diags, joinInOrder(errs, userPath)
	}
	return l.cfg, l.diags, nil
}

// joinInOrder joins errs (flattening joined ones) ordered by where they
// are: the user file, the project file, then the environment; by line
// within a file, a problem without a line last.
func joinInOrder(errs []error, userFile string) error {
	var flat []error
	var walk func(err error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		flat = append(flat, err)
	}
	for _, err := range errs {
		walk(err)
	}
	rank := func(err error) (int, int) {
		var e *Error
		if !errors.As(err, &e) {
			return 3, 0
		}
		file := 2
		switch {
		case e.File == userFile:
			file = 0
		case e.File != "":
			file = 1
		}
		line := e.Line
		if line == 0 {
			line = math.MaxInt
		}
		return file, line
	}
	slices.SortStableFunc(flat, func(a, b error) int {
		fa, la := rank(a)
		fb, lb := rank(b)
		if fa != fb {
			return fa - fb
		}
		return cmp.Compare(la, lb)
	})
	return errors.Join(flat...)
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// readLayer reads one configuration file, name inside dir, following
// symbolic links as links says: anywhere for the user file (dotfiles
// managers link it), only inside the workspace for a project file. A
// missing file gives nil, nil; anything but a regular file (a FIFO would
// hang the read) is an error.
func readLayer(kind SourceKind, dir, name string, links statefile.Links) (*layer, error) {
	path := filepath.Join(dir, name)
	f, err := statefile.Open(dir, name, os.O_RDONLY, 0, links)
	if err != nil {
		var nr *statefile.NotRegularError
		var out *statefile.OutsideError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case errors.As(err, &nr) && nr.Mode.IsDir():
			return nil, &Error{File: path, Message: "is a directory, not a configuration file; remove it or replace it with a TOML file"}
		case errors.As(err, &nr):
			return nil, &Error{File: path, Message: nr.What(), Err: err}
		case errors.As(err, &out):
			return nil, &Error{File: path, Message: out.What() + "; a repository cannot make SCV read files outside it", Err: err}
		}
		return nil, &Error{File: path, Message: fmt.Sprintf("cannot read the %s: %v", kind, err), Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Message: fmt.Sprintf("cannot read the %s: %v", kind, err), Err: err}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Message: fmt.Sprintf("cannot read the %s: %v", kind, err), Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Message: fmt.Sprintf("is larger than %d bytes; a configuration file this big is a mistake", MaxFileSize)}
	}
	return &layer{kind: kind, file: path, data: data, mode: fi.Mode(), ix: indexKeys(data)}, nil
}

// applyUser decodes the user file and merges every key it sets whose value
// fits; it returns the file's problems.
func (l *loader) applyUser(u *layer) []error {
	var fc Config
	errs, ok := l.decode(u, &fc)
	if !ok {
		return errs
	}
	l.user = u
	l.merge(configSchema(), reflect.ValueOf(l.cfg).Elem(), reflect.ValueOf(&fc).Elem(), nil, u, nil)
	l.checkKeyFileMode(u)
	return errs
}

// applyProject decodes the project file, warns about the keys a project may
// not set, and merges the rest; it returns the file's problems.
func (l *loader) applyProject(p *layer) []error {
	var pf projectFile
	errs, ok := l.decode(p, &pf)
	if !ok {
		return errs
	}
	if e, ok := p.ix.first("mcp_servers"); ok {
		// Refused, not ignored: a repository that asks to start programs
		// must not look like it works for whoever opens it.
		errs = append(errs, &Error{File: p.file, Line: e.line, Key: "mcp_servers",
			Message: fmt.Sprintf("[mcp_servers] is refused in a project config: a project cannot start programs or name servers for you; add the servers you trust to your user config ($SCV_HOME/%s) or with `scv mcp add`", paths.ConfigFileName)})
	}
	l.warnForbidden(p)
	allow := func(path []string) bool { return l.allowProjectValue(p, path, &pf) }
	pv := reflect.ValueOf(&pf).Elem()
	cv := reflect.ValueOf(l.cfg).Elem()
	cs := configSchema()
	for _, f := range schemaOf(pv.Type()).fields {
		if slices.Contains(projectForbiddenRoots, f.name) {
			continue
		}
		cf, ok := cs.field(f.name)
		if !ok {
			panic("config: projectFile field " + f.name + " is not a Config field")
		}
		l.merge(cf.s, cv.Field(cf.index), pv.Field(f.index), []string{f.name}, p, allow)
	}
	return errs
}

func isProjectForbidden(path []string) bool {
	return len(path) > 0 && slices.Contains(projectForbiddenRoots, path[0])
}

// allowProjectValue applies the rules on values a project may set: the
// approval policy may only become stricter (a repository must not be able
// to switch approvals off for whoever opens it).
func (l *loader) allowProjectValue(p *layer, path []string, pf *projectFile) bool {
	switch key := joinKey(path); key {
	case "tools.approval_policy":
	case "tools.max_processes":
		return l.allowProjectLimit(p, path, int64(l.cfg.Tools.MaxProcesses), int64(pf.Tools.MaxProcesses), "processes")
	case "tools.memory_limit_mb":
		return l.allowProjectLimit(p, path, l.cfg.Tools.MemoryLimitMB, pf.Tools.MemoryLimitMB, "MiB")
	case "tools.allow":
		// A repository must not be able to approve calls for whoever
		// opens it.
		e, _ := p.ix.first(path...)
		l.diags = append(l.diags, Diagnostic{
			File: p.file, Line: e.line, Key: "tools.allow",
			Message: "tools.allow is ignored: a project may not approve calls for whoever opens it; put the rules in your user config if you trust them",
		})
		return false
	default:
		return true
	}
	cur, next := l.cfg.Tools.ApprovalPolicy, pf.Tools.ApprovalPolicy
	if !validApprovalPolicy(next) || approvalStrictness(next) >= approvalStrictness(cur) {
		return true // an invalid value is merged and reported by validate
	}
	e, _ := p.ix.first(path...)
	l.diags = append(l.diags, Diagnostic{
		File: p.file, Line: e.line, Key: "tools.approval_policy",
		Message: fmt.Sprintf("tools.approval_policy = %q is ignored: a project may make approvals stricter than %q but not looser; set it in your user config or with %s if you trust this project", next, cur, EnvApprovalPolicy),
	})
	return false
}

// allowProjectLimit applies the same rule to the tools' resource limits: a
// project may lower a limit but not raise or remove it (0 is no limit), so
// a repository cannot let a fork loop or a runaway allocation through.
func (l *loader) allowProjectLimit(p *layer, path []string, cur, next int64, unit string) bool {
	looser := next > cur && cur != 0 || next == 0 && cur != 0
	if next < 0 || !looser {
		return true // a value out of range is merged and reported by validate
	}
	key := joinKey(path)
	e, _ := p.ix.first(path...)
	l.diags = append(l.diags, Diagnostic{
		File: p.file, Line: e.line, Key: key,
		Message: fmt.Sprintf("%s = %d is ignored: a project may lower this limit (%d %s now) but not raise or remove it; set it in your user config if you trust this project", key, next, cur, unit),
	})
	return false
}

func approvalStrictness(p ApprovalPolicy) int {
	switch p {
	case ApprovalNever:
		return 2
	case ApprovalOnRisk:
		return 1
	default:
		return 0
	}
}

// warnForbidden adds a Diagnostic for each key of a forbidden table set in a
// project file.
func (l *loader) warnForbidden(p *layer) {
	seen := map[string]bool{}
	cs := configSchema()
	for _, e := range p.ix.entries {
		// Report the innermost keys only: a table or inline table is
		// reported through the keys it holds, unless it holds none.
		if !isProjectForbidden(e.path) || p.ix.hasInner(e.path) || e.path[0] == "mcp_servers" {
			continue
		}
		path := e.path
		if lp := cs.leafPrefix(path); lp != nil {
			path = lp
		}
		key := joinKey(path)
		if seen[key] {
			continue
		}
		seen[key] = true
		what := "key " + quoteKey(key)
		if e.table {
			what = "table [" + key + "]"
		}
		l.diags = append(l.diags, Diagnostic{
			File: p.file, Line: e.line, Key: key,
			Message: fmt.Sprintf("%s is ignored: a project config may set only [tools] and [skills] options, never providers, credentials, agent or web settings; move it to your user config ($SCV_HOME/%s)", what, paths.ConfigFileName),
		})
	}
}

// checkKeyFileMode warns when a user file holding an api_key or an
// app_secret can be read by other users.
func (l *loader) checkKeyFileMode(u *layer) {
	if u.mode.Perm()&0o077 == 0 {
		return
	}
	for _, e := range u.ix.entries {
		what, alt := "", ""
		switch {
		case len(e.path) == 3 && e.path[0] == "providers" && e.path[2] == "api_key":
			what, alt = "an API key", "api_key_env"
		case len(e.path) == 4 && e.path[0] == "channels" && e.path[3] == "app_secret":
			what, alt = "an app secret", "app_secret_env"
		default:
			continue
		}
		l.diags = append(l.diags, Diagnostic{
			File: u.file, Line: e.line, Key: joinKey(e.path),
			Message: fmt.Sprintf("this file holds %s but other users can read it (mode %v); run chmod 600 %s, or use %s instead", what, u.mode.Perm(), u.file, alt),
		})
		return
	}
}

// decode decodes a layer into target (a pointer to a struct) and returns
// every problem of the file, in one pass: unknown keys (found from the key
// index and the target's schema, which gives full key paths and costs
// linear time) and values of the wrong type (assign.go), or, for a
// document that is not TOML (a syntax error, a key defined twice), that
// error and the unknown keys before it. ok is false when the document
// could not be read: nothing of it is merged.
func (l *loader) decode(ly *layer, target any) (errs []error, ok bool) {
	s := schemaOf(reflect.TypeOf(target).Elem())
	ly.rejected = map[string]bool{}
	var doc map[string]any
	if err := toml.Unmarshal(ly.data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			errs = append(errs, ly.decodeError(de))
		} else {
			errs = append(errs, &Error{File: ly.file, Message: fmt.Sprintf("cannot be decoded: %v", err), Err: err})
		}
		if uk := ly.unknownKeys(s); uk != nil {
			errs = append(errs, uk)
		}
		return errs, false
	}
	if uk := ly.unknownKeys(s); uk != nil {
		errs = append(errs, uk)
	}
	a := &assigner{ly: ly}
	a.assign(s, reflect.ValueOf(target).Elem(), doc, nil)
	for k := range ly.rejected {
		l.rejected[k] = true
	}
	return append(errs, a.result()...), true
}

// unknownKeys reports the keys of the layer that s does not know: each
// unknown table once (not the keys inside it), at most maxReported.
func (ly *layer) unknownKeys(s *schema) error {
	var errs []error
	reported := map[string]bool{}
	dropped := 0
	for _, e := range ly.ix.entries {
		known, _ := s.resolve(e.path)
		if known == len(e.path) || reported[joinKey(e.path[:known+1])] {
			continue
		}
		if len(errs) == maxReported {
			dropped++
			continue
		}
		reported[joinKey(e.path)] = true
		errs = append(errs, ly.unknownKeyError(e.path, e.table, e.line, e.col))
	}
	if dropped > 0 {
		errs = append(errs, &Error{File: ly.file, Message: fmt.Sprintf("and %d more unknown keys; see %s for the keys", dropped, DocsRef)})
	}
	return errors.Join(errs...)
}

func (ly *layer) unknownKeyError(path []string, table bool, line, col int) error {
	key := joinKey(path)
	var msg string
	if table {
		msg = fmt.Sprintf("unknown table [%s]; see %s for the keys", key, DocsRef)
	} else {
		msg = fmt.Sprintf("unknown key %s; see %s for the keys", quoteKey(key), DocsRef)
	}
	if sug := configSchema().suggest(path); sug != nil {
		if table {
			msg += fmt.Sprintf(" (did you mean [%s]?)", joinKey(sug))
		} else {
			msg += fmt.Sprintf(" (did you mean %s?)", quoteKey(joinKey(sug)))
		}
	}
	return &Error{File: ly.file, Line: line, Column: col, Key: key, Message: msg}
}

// keyAt returns the full key path a go-toml error is about, using the key
// index (go-toml gives partial keys inside inline tables), and the index
// entry found.
func (ly *layer) keyAt(de *toml.DecodeError) ([]string, keyEntry) {
	line, col := de.Position()
	dk := []string(de.Key())
	if off := ly.ix.offset(line, col); off >= 0 {
		if e, ok := ly.ix.before(off); ok && (len(dk) == 0 || hasPrefix(e.path, dk) || hasSuffix(e.path, dk)) {
			return e.path, e
		}
	}
	return dk, keyEntry{line: line, col: col}
}

func hasSuffix(path, suffix []string) bool {
	return len(path) >= len(suffix) && slices.Equal(path[len(path)-len(suffix):], suffix)
}

// decodeError turns a go-toml DecodeError into an *Error a person can act on.
func (ly *layer) decodeError(de *toml.DecodeError) error {
	line, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	path, found := ly.keyAt(de)
	// A file whose keys all parsed (the key index is complete) fails on a
	// value, such as a number too large: the key is known.
	if len(de.Key()) == 0 && !(ly.ix.complete && found.line > 0) {
		return &Error{File: ly.file, Line: line, Column: col, Err: de,
			Message: fmt.Sprintf("invalid TOML: %s; fix the syntax (see %s)", msg, DocsRef)}
	}
	key := joinKey(path)
	e := &Error{File: ly.file, Line: line, Column: col, Key: key, Err: de}
	switch {
	case strings.HasPrefix(msg, "cannot decode TOML "):
		got, _, _ := strings.Cut(strings.TrimPrefix(msg, "cannot decode TOML "), " into")
		if want := expectedType(path); want != "" {
			e.Message = fmt.Sprintf("key %s must be %s, not %s %s", quoteKey(key), want, article(got), got)
		} else {
			e.Message = fmt.Sprintf("key %s has the wrong type (%s); see %s", quoteKey(key), msg, DocsRef)
		}
	case strings.Contains(msg, "array table"):
		e.Message = fmt.Sprintf("key %s must be a table ([%s]), not an array of tables ([[%s]])", quoteKey(key), key, key)
	case strings.Contains(msg, "already defined"):
		e.Message = fmt.Sprintf("key %s is defined more than once; keep one definition", quoteKey(key))
	default:
		e.Message = fmt.Sprintf("key %s: %s", quoteKey(key), msg)
	}
	return e
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}

func quoteKey(key string) string {
	if strings.ContainsRune(key, '"') {
		return "'" + key + "'"
	}
	return `"` + key + `"`
}

// mapDefaults gives the value a new entry of a named table starts from.
var mapDefaults = map[string]func() any{
	"providers":       func() any { return DefaultProvider() },
	"agents":          func() any { return AgentSettings{} },
	"mcp_servers":     func() any { return DefaultMCPServer() },
	"channels.feishu": func() any { return DefaultFeishuAccount() },
	"channels.wechat": func() any { return DefaultWeChatAccount() },
}

// merge copies into dst every value of src that the layer sets (and allow
// accepts, when not nil), recording where it came from. A new entry of a
// named table starts from its default (mapDefaults).
func (l *loader) merge(s *schema, dst, src reflect.Value, path []string, ly *layer, allow func([]string) bool) {
	switch {
	case s.isLeaf():
		e, ok := ly.ix.first(path...)
		if !ok || ly.rejected[joinKey(path)] || (allow != nil && !allow(path)) {
			return
		}
		dst.Set(src)
		l.cfg.Sources[joinKey(path)] = Source{Kind: ly.kind, File: ly.file, Line: e.line}
	case s.elem != nil:
		if src.IsNil() {
			return
		}
		keys := src.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			p := append(slices.Clip(path), k.String())
			if !ly.ix.has(p...) || ly.rejected[joinKey(p)] || (allow != nil && !allow(p)) {
				continue
			}
			if dst.IsNil() {
				dst.Set(reflect.MakeMap(dst.Type()))
			}
			elem := reflect.New(dst.Type().Elem()).Elem()
			if cur := dst.MapIndex(k); cur.IsValid() {
				elem.Set(cur)
			} else {
				if def, ok := mapDefaults[joinKey(path)]; ok {
					elem.Set(reflect.ValueOf(def()))
				}
				walkLeaves(s.elem, elem, p, func(lp []string, _ reflect.Value) {
					l.cfg.Sources[joinKey(lp)] = Source{Kind: SourceDefault}
				})
			}
			l.merge(s.elem, elem, src.MapIndex(k), p, ly, allow)
			dst.SetMapIndex(k, elem)
		}
	default:
		for _, f := range s.fields {
			l.merge(f.s, dst.Field(f.index), src.Field(f.index), append(slices.Clip(path), f.name), ly, allow)
		}
	}
}

// resolveProvider settles the active provider once the files are merged:
// the implicit provider of OPENAI_API_KEY when the user file configures no
// provider, the only provider when provider.active is not set, and so on.
func (l *loader) resolveProvider() error {
	c := l.cfg
	activeSet := l.user != nil && l.user.ix.has("provider", "active")
	if len(c.Providers) == 0 {
		key, _ := l.env.LookupEnv(EnvOpenAIKey)
		if strings.TrimSpace(key) == "" || (activeSet && c.Provider.Active != ImplicitProvider) {
			return nil
		}
		p := DefaultProvider()
		name := ImplicitProvider
		prefix := "providers." + name + "."
		for _, k := range leafKeys(&p) {
			c.Sources[prefix+k] = Source{Kind: SourceDefault}
		}
		c.Sources[prefix+"api_key_env"] = Source{Kind: SourceEnv, Env: EnvOpenAIKey}
		if base, _ := l.env.LookupEnv(EnvOpenAIBaseURL); base != "" {
			p.BaseURL = base
			c.Sources[prefix+"base_url"] = Source{Kind: SourceEnv, Env: EnvOpenAIBaseURL}
		}
		c.Providers[name] = p
		if !activeSet {
			c.Provider.Active = name
			c.Sources["provider.active"] = Source{Kind: SourceEnv, Env: EnvOpenAIKey}
		}
		return nil
	}
	if activeSet {
		return nil
	}
	names := c.ProviderNames()
	first, _ := l.user.ix.first("providers")
	if len(names) == 1 {
		c.Provider.Active = names[0]
		e, _ := l.user.ix.first("providers", names[0])
		c.Sources["provider.active"] = Source{Kind: SourceUser, File: l.user.file, Line: e.line}
		return nil
	}
	return &Error{File: l.user.file, Line: first.line, Key: "provider.active",
		Message: fmt.Sprintf("several providers are configured (%s) but provider.active does not say which to use; add [provider] active = %q (or another of them)", quoteList(names, "and"), names[0])}
}

// applyEnv applies SCV_MODEL and SCV_APPROVAL_POLICY.
func (l *loader) applyEnv() error {
	c := l.cfg
	if v, ok := l.env.LookupEnv(EnvApprovalPolicy); ok && v != "" {
		p := ApprovalPolicy(strings.TrimSpace(v))
		if !validApprovalPolicy(p) {
			return &Error{Env: EnvApprovalPolicy, Key: "tools.approval_policy",
				Message: fmt.Sprintf("%q is not an approval policy; use %s, or unset it", v, quoteList(approvalPolicies, "or"))}
		}
		c.Tools.ApprovalPolicy = p
		c.Sources["tools.approval_policy"] = Source{Kind: SourceEnv, Env: EnvApprovalPolicy}
	}
	if v, ok := l.env.LookupEnv(EnvModel); ok && strings.TrimSpace(v) != "" {
		name, p, isDemo := c.ActiveProvider()
		if isDemo {
			l.diags = append(l.diags, Diagnostic{
				Message: fmt.Sprintf("%s is set but the active provider is the built-in demo, which has no model to override; configure a provider (see %s) or unset %s", EnvModel, DocsRef, EnvModel)})
			return nil
		}
		p.Model = strings.TrimSpace(v)
		c.Providers[name] = p
		c.Sources[joinKey([]string{"providers", name, "model"})] = Source{Kind: SourceEnv, Env: EnvModel}
	}
	return nil
}

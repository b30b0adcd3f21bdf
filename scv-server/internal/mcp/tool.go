package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/spill"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/textcut"
)

// Limits on what a server may offer.
const (
	// maxToolName is the providers' bound on a function name.
	maxToolName = 64
	// maxDescription bounds a tool's description, in bytes.
	maxDescription = 4096
	// maxSchema bounds a tool's input schema, in bytes.
	maxSchema = 64 << 10
)

// Prefix starts the name of every MCP tool: mcp__<server>__<tool>.
const Prefix = "mcp__"

// toolNameRE is what providers take as a function name.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// ToolName is the name the model sees for a server's tool.
func ToolName(server, tool string) string { return Prefix + server + "__" + tool }

// adaptTools turns a server's listed tools into tools a session offers,
// skipping (with why) those filtered out by the configuration, with a name
// the provider would refuse, or with a schema that cannot be repaired.
func adaptTools(s *server, listed []*sdk.Tool) (offered []tools.SourceTool, skipped []string) {
	seen := map[string]bool{}
	for _, t := range listed {
		if t == nil || !s.cfg.ToolAllowed(t.Name) {
			continue
		}
		name := ToolName(s.name, t.Name)
		switch {
		case len(name) > maxToolName || !toolNameRE.MatchString(t.Name):
			skipped = append(skipped, fmt.Sprintf("%s: the name %q is not a function name providers take (letters, digits, '_' and '-', %d bytes with the prefix)", t.Name, name, maxToolName))
			continue
		case seen[name]:
			skipped = append(skipped, fmt.Sprintf("%s: listed twice", t.Name))
			continue
		}
		schema, res, err := repairSchema(t.InputSchema)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: its input schema %v", t.Name, err))
			continue
		}
		seen[name] = true
		desc := t.Description
		if t.Annotations != nil && t.Annotations.Title != "" && desc == "" {
			desc = t.Annotations.Title
		}
		if len(desc) > maxDescription {
			desc = textcut.Prefix(desc, maxDescription-3) + "..."
		}
		desc = fmt.Sprintf("(MCP server %s) %s", s.name, desc)
		offered = append(offered, tools.SourceTool{
			Tool:   &tool{srv: s, remote: t.Name, spec: tools.Spec{Name: name, Description: desc, Schema: schema}, ann: t.Annotations},
			Spec:   tools.Spec{Name: name, Description: desc, Schema: schema},
			Schema: res,
		})
	}
	return offered, skipped
}

// repairSchema makes a server's input schema one the providers take: a
// JSON object schema of type "object" with properties, without "$schema"
// (servers built with zod say draft-07, which the validator does not
// read), no larger than maxSchema, that the validator resolves. A schema
// of another type, or one that does not resolve, is refused.
func repairSchema(in any) (json.RawMessage, *jsonschema.Resolved, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, nil, fmt.Errorf("is not JSON: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, nil, errors.New("is not a JSON object")
	}
	delete(obj, "$schema")
	switch t := obj["type"]; t {
	case nil:
		obj["type"] = "object"
	case "object":
	default:
		return nil, nil, fmt.Errorf("has type %v; a tool's arguments must be an object", t)
	}
	if p, ok := obj["properties"]; !ok || p == nil {
		obj["properties"] = map[string]any{}
	} else if _, ok := p.(map[string]any); !ok {
		return nil, nil, errors.New("has properties that are not an object")
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	if len(out) > maxSchema {
		return nil, nil, fmt.Errorf("is %d bytes, over the %d bytes SCV sends a model", len(out), maxSchema)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, nil, fmt.Errorf("is not a JSON Schema: %w", err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("does not resolve: %w", err)
	}
	return out, res, nil
}

// tool is one MCP tool as a session sees it.
type tool struct {
	srv    *server
	remote string // the server's name for it
	spec   tools.Spec
	ann    *sdk.ToolAnnotations
}

func (t *tool) Spec() tools.Spec { return t.spec }

// Risk is read_only for a tool the server annotates readOnlyHint; else a
// stdio server's tool is process risk (a local program acts) and an HTTP
// server's network risk, both of which ask under on-risk.
func (t *tool) Risk() protocol.Risk {
	switch {
	case t.ann != nil && t.ann.ReadOnlyHint:
		return protocol.RiskReadOnly
	case t.srv.cfg.Stdio():
		return protocol.RiskProcess
	default:
		return protocol.RiskNetwork
	}
}

// RuleKeys are the session-rule keys of a tool: the tool itself, then its
// whole server.
func RuleKeys(server, tool string) []string {
	return []string{"mcp:" + server + "/" + tool, "mcp:" + server + "/"}
}

func (t *tool) Prepare(env tools.Env, args json.RawMessage) (*tools.Plan, error) {
	summary := fmt.Sprintf("MCP %s → %s %s", t.srv.name, t.remote, clipArgs(args))
	if t.ann != nil && t.ann.DestructiveHint != nil && *t.ann.DestructiveHint {
		summary += " (the server marks it destructive)"
	}
	keys := RuleKeys(t.srv.name, t.remote)
	return &tools.Plan{
		Risk:    t.Risk(),
		Summary: summary,
		Rule:    &tools.Rule{Key: keys[0], Description: fmt.Sprintf("calls of %s from MCP server %s", t.remote, t.srv.name)},
		Wider:   &tools.Rule{Key: keys[len(keys)-1], Description: fmt.Sprintf("calls of every tool from MCP server %s", t.srv.name)},
		Keys:    keys,
		Run:     func(ctx context.Context) (tools.Result, error) { return t.call(ctx, env, args) },
	}, nil
}

func (t *tool) call(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	sess := t.srv.session()
	if sess == nil {
		st := t.srv.status()
		why := st.State
		if st.Error != "" {
			why += ": " + st.Error
		}
		return tools.Failed(fmt.Sprintf("the MCP server %s is not running (%s); try again later or answer without it", t.srv.name, why)), nil
	}
	var arguments map[string]any
	if err := json.Unmarshal(args, &arguments); err != nil {
		return tools.Failed("the arguments are not a JSON object: " + err.Error()), nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.srv.cfg.ToolTimeout())
	defer cancel()
	params := &sdk.CallToolParams{Name: t.remote, Arguments: arguments}
	tok := uuid.NewString()
	params.SetProgressToken(tok)
	defer t.srv.watchProgress(tok, env.Progress)()
	res, err := sess.CallTool(cctx, params)
	switch {
	case ctx.Err() != nil:
		// The turn was cancelled; the SDK sent notifications/cancelled.
		return tools.Result{}, ctx.Err()
	case cctx.Err() != nil:
		return tools.Failed(fmt.Sprintf("timed out after %d s (tool_timeout_seconds of MCP server %s); the server was told to cancel the call",
			t.srv.cfg.ToolTimeoutSeconds, t.srv.name)), nil
	case err != nil:
		return tools.Failed(fmt.Sprintf("the MCP server %s failed the call: %v", t.srv.name, err)), nil
	}
	text := resultText(res)
	out := tools.Result{Success: !res.IsError}
	var spillPath string
	if env.StateDir != "" {
		spillPath = filepath.Join(env.StateDir, tools.SpillDir, "mcp-"+tok+".log")
	}
	out.Output, out.Truncated = spill.Text(text, env.OutputLimit, spillPath, t.srv.m.opts.SpillMaxBytes, "[the full output was not kept]")
	return out, nil
}

// resultText converts a result's content to the text the model reads.
// The providers SCV speaks to take no images in tool results, so images
// and audio are described, not sent.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes; not shown, the model endpoint takes no images from tools]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes; not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.ToValidUTF8(strings.Join(parts, "\n"), "\uFFFD")
}

// clipArgs shows a call's arguments in a summary, at most 200 bytes.
func clipArgs(args json.RawMessage) string {
	s := string(args)
	if len(s) > 200 {
		s = textcut.Prefix(s, 197) + "..."
	}
	return s
}

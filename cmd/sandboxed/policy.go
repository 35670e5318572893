package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox/explain"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var policyCommand = &cli.Command{
	Name:  "policy",
	Usage: "show or write the operator policy",
	Subcommands: []*cli.Command{
		{
			Name:  "show",
			Usage: "print the policy in force and where it came from",
			Description: `The policy in force is the first of: --policy FILE,
$XDG_CONFIG_HOME/sandboxed/policy.yaml (~/.config/sandboxed/policy.yaml),
/etc/sandboxed/policy.yaml, the built-in default. Keys a file leaves out
show their built-in values.`,
			Flags:  []cli.Flag{policyFlag, formatFlag("yaml", "yaml", "json")},
			Action: policyShowAction,
		},
		{
			Name:  "init",
			Usage: "write the built-in policy, commented key by key, as a policy file",
			Description: `Writes to --output FILE, else $XDG_CONFIG_HOME/sandboxed/policy.yaml
(~/.config/sandboxed/policy.yaml). An existing file is kept unless --force.
The file is written atomically: readers see the old file or the whole new one.`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the policy to `FILE`"},
				&cli.BoolFlag{Name: "force", Usage: "replace an existing file"},
			},
			Action: policyInitAction,
		},
	},
}

func policyShowAction(c *cli.Context) error {
	format, err := checkFormat(c, "yaml", "json")
	if err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageError(fmt.Errorf("policy show: unexpected argument %q (use --policy FILE)", c.Args().First()))
	}
	p, path, err := loadPolicy(c)
	if err != nil {
		return err
	}
	src := explain.PolicySource(path)
	view := policyNode(reflect.ValueOf(*p))
	if format == "json" {
		var buf bytes.Buffer
		buf.WriteString(`{"source":`)
		s, _ := json.Marshal(src.Source)
		buf.Write(s)
		buf.WriteString(`,"file":`)
		f, _ := json.Marshal(src.File)
		buf.Write(f)
		buf.WriteString(`,"policy":`)
		if err := nodeJSON(&buf, view); err != nil {
			return err
		}
		buf.WriteString("}")
		var out bytes.Buffer
		if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
			return fmt.Errorf("policy show: %w", err)
		}
		out.WriteByte('\n')
		_, err := c.App.Writer.Write(out.Bytes())
		return err
	}
	fmt.Fprintf(c.App.Writer, "# policy in force: %s\n", src.Source)
	return writeYAML(c.App.Writer, view)
}

// policyNode turns a policy value into an ordered YAML node, keys in the
// order of the struct fields, sizes and durations in words (512MiB, 5m0s),
// so that the output loads back as the same policy.
func policyNode(v reflect.Value) *yaml.Node {
	if s, ok := v.Interface().(fmt.Stringer); ok && (v.Kind() == reflect.Int64 || v.Kind() == reflect.Int) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.String()}
	}
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" || !t.Field(i).IsExported() {
				continue
			}
			if f := v.Field(i); f.Kind() == reflect.String && f.String() == "" {
				continue // unset, as in a policy file that leaves the key out
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: tag}, policyNode(v.Field(i)))
		}
		return n
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if v.Len() == 0 {
			n.Style = yaml.FlowStyle
		}
		for i := 0; i < v.Len(); i++ {
			n.Content = append(n.Content, policyNode(v.Index(i)))
		}
		return n
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}
	case reflect.Float64:
		// 2, not 2.0e+00: tagged as YAML reads it back.
		s := strconv.FormatFloat(v.Float(), 'f', -1, 64)
		if strings.Contains(s, ".") {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}
	case reflect.String:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.String()}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(v.Interface())}
}

// nodeJSON writes a node built by policyNode as JSON, keeping key order.
func nodeJSON(w *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		w.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			w.Write(k)
			w.WriteByte(':')
			if err := nodeJSON(w, n.Content[i+1]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case yaml.SequenceNode:
		w.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := nodeJSON(w, c); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	default:
		switch n.Tag {
		case "!!int", "!!float", "!!bool":
			w.WriteString(n.Value)
		default:
			s, _ := json.Marshal(n.Value)
			w.Write(s)
		}
	}
	return nil
}

// defaultPolicyPath is where `policy init` writes without --output: the
// user policy file Locate looks for.
func defaultPolicyPath() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxed", "policy.yaml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("policy init: no home directory to write ~/.config/sandboxed/policy.yaml to; pass --output FILE")
	}
	return filepath.Join(home, ".config", "sandboxed", "policy.yaml"), nil
}

func policyInitAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError(fmt.Errorf("policy init: unexpected argument %q (use --output FILE)", c.Args().First()))
	}
	path := c.String("output")
	if path == "" {
		p, err := defaultPolicyPath()
		if err != nil {
			return err
		}
		path = p
	}
	data := policy.DefaultYAML()
	// The file must load to the built-in policy; refuse to write one that
	// would not.
	if _, err := policy.Parse(data, path); err != nil {
		return fmt.Errorf("policy init: the built-in policy does not load: %w", err)
	}
	err := tool.WriteAtomic(path, data, c.Bool("force"))
	if errors.Is(err, tool.ErrExists) {
		return fmt.Errorf("policy init: %s already exists; pass --force to replace it with the built-in policy", path)
	}
	if err != nil {
		return fmt.Errorf("policy init: %w", err)
	}
	fmt.Fprintf(c.App.ErrWriter, "sandboxed: wrote the built-in policy to %s\n", path)
	return nil
}

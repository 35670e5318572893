package tool

import (
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
)

// Pos is a location in a definition file. Line and Col are 1-based; a zero
// Pos means "no location" (a definition built in memory).
type Pos struct {
	File string `json:"file,omitempty" yaml:"-"`
	Line int    `json:"line,omitempty" yaml:"-"`
	Col  int    `json:"col,omitempty" yaml:"-"`
}

// Scope says where a definition was found.
type Scope string

const (
	ScopeLocal  Scope = "local"
	ScopeUser   Scope = "user"
	ScopeGlobal Scope = "global"
	ScopePath   Scope = "path" // given on the command line as a file path
)

// Isolation is the tier a definition asks for (security.isolation;
// internal/tier owns the values; the names below are the same constants).
type Isolation = tier.Tier

// The isolation tiers a definition may name.
const (
	IsolationNone      = tier.None
	IsolationProcess   = tier.Process
	IsolationContainer = tier.Container
)

// Privilege is security.execution-privilege (internal/privilege owns the
// values; the names below are the same constants).
type Privilege = privilege.Privilege

// The execution privileges a definition may name.
const (
	PrivilegeSameAsUser = privilege.SameAsUser
	PrivilegeReduced    = privilege.Reduced
	PrivilegeElevated   = privilege.Elevated
)

// ParamType is a parameter's declared type.
type ParamType string

const (
	TypeString  ParamType = "string"
	TypeNumber  ParamType = "number"
	TypeBoolean ParamType = "boolean"
	TypeArray   ParamType = "array"
	TypeObject  ParamType = "object"
)

// Definition is one CYCOD custom tool definition, with every field of the
// reference schema (specs/000) plus our own `sandboxed:` section. It is
// pure data: loading fills it, binding reads it, nothing mutates it after
// Load returns.
type Definition struct {
	Name            string `json:"name" yaml:"name,omitempty"`
	Description     string `json:"description" yaml:"description"`
	Version         string `json:"version,omitempty" yaml:"version,omitempty"`
	MinCycodVersion string `json:"min-cycod-version,omitempty" yaml:"min-cycod-version,omitempty"`

	// Aliases.
	Type              string            `json:"type,omitempty" yaml:"type,omitempty"` // "" or "alias"
	BaseTool          string            `json:"base-tool,omitempty" yaml:"base-tool,omitempty"`
	DefaultParameters map[string]string `json:"default-parameters,omitempty" yaml:"default-parameters,omitempty"`

	// Execution: exactly one of Exec (single step), Commands (platform
	// commands, normalised to a single step) or Steps, unless Type is alias.
	Exec     *Exec             `json:"exec,omitempty" yaml:",inline"`
	Commands *PlatformCommands `json:"commands,omitempty" yaml:"commands,omitempty"`
	Steps    []Step            `json:"steps,omitempty" yaml:"steps,omitempty"`

	Parameters  []Parameter  `json:"parameters,omitempty" yaml:"parameters,omitempty" form:"keyed"` // in file order
	Environment *Environment `json:"environment,omitempty" yaml:"environment,omitempty"`

	FunctionCalling *FunctionCalling `json:"function-calling,omitempty" yaml:"function-calling,omitempty"`
	Security        Security         `json:"security" yaml:"security"`
	FilePaths       *FilePaths       `json:"file-paths,omitempty" yaml:"file-paths,omitempty"`
	Metadata        *Metadata        `json:"metadata,omitempty" yaml:"metadata,omitempty"`
	Resources       *Resources       `json:"resources,omitempty" yaml:"resources,omitempty"`

	Interactive        bool                `json:"interactive,omitempty" yaml:"interactive,omitempty"`
	InteractiveOptions *InteractiveOptions `json:"interactive-options,omitempty" yaml:"interactive-options,omitempty"`

	Tests        *TestSuite   `json:"tests,omitempty" yaml:"tests,omitempty"`
	Changelog    []Change     `json:"changelog,omitempty" yaml:"changelog,omitempty"`
	Dependencies []Dependency `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`
	Debugging    *Debugging   `json:"debugging,omitempty" yaml:"debugging,omitempty"`

	Tags             []string      `json:"tags,omitempty" yaml:"tags,omitempty,flow"`
	Platforms        []string      `json:"platforms,omitempty" yaml:"platforms,omitempty,flow"`
	WorkingDirectory string        `json:"working-directory,omitempty" yaml:"working-directory,omitempty"`
	Timeout          time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" form:"ms"` // top-level `timeout` (ms in YAML)
	IgnoreErrors     bool          `json:"ignore-errors,omitempty" yaml:"ignore-errors,omitempty"`
	Input            string        `json:"input,omitempty" yaml:"input,omitempty"`

	// Sandboxed holds our own additions (the one `sandboxed:` key).
	Sandboxed *SandboxedExt `json:"sandboxed,omitempty" yaml:"sandboxed,omitempty"`

	// Source is where the definition came from; not part of the YAML.
	Source Source `json:"-" yaml:"-"`
	// Positions of notable nodes, for located errors after loading
	// (e.g. a permission that fails to resolve at bind time).
	Pos DefPositions `json:"-" yaml:"-"`
}

// Source records where a definition was loaded from.
type Source struct {
	Path   string // absolute path of the file; "" for in-memory definitions
	Scope  Scope
	SHA256 string // hex digest of the file's bytes
	Raw    []byte // the file's bytes, as read
}

// DefPositions locates the nodes later stages may need to point at.
type DefPositions struct {
	Name        Pos
	Exec        Pos            // the first execution key (bash, python, commands, steps, …)
	Platforms   Pos            // platforms:
	Permissions []Pos          // parallel to Security.RequiredPermissions
	Parameters  map[string]Pos // by parameter name
	Steps       map[string]Pos // by step name
}

// ExecKind is the key that carried a command.
type ExecKind string

const (
	ExecBash   ExecKind = "bash"
	ExecCmd    ExecKind = "cmd"
	ExecPwsh   ExecKind = "pwsh"
	ExecRun    ExecKind = "run"
	ExecScript ExecKind = "script"
)

// Exec is one command: the execution key that carried it, its text, and for
// `script` the shell to run it with.
type Exec struct {
	Kind    ExecKind `json:"kind" yaml:"-"`
	Command string   `json:"command" yaml:"-"`
	Shell   string   `json:"shell,omitempty" yaml:"-"` // only with script
}

// PlatformCommands is the `commands:` form.
type PlatformCommands struct {
	Default   string            `json:"default,omitempty" yaml:"default,omitempty"`
	Platforms map[string]string `json:"platforms,omitempty" yaml:"platforms,omitempty"` // windows, linux, macos, unix
}

// Step is one entry of `steps:`.
type Step struct {
	Name             string            `json:"name" yaml:"name"`
	Exec             *Exec             `json:"exec,omitempty" yaml:",inline"`                // nil when UseTool is set
	UseTool          string            `json:"use-tool,omitempty" yaml:"use-tool,omitempty"` // composition
	With             map[string]string `json:"with,omitempty" yaml:"with,omitempty"`
	ContinueOnError  bool              `json:"continue-on-error,omitempty" yaml:"continue-on-error,omitempty"`
	RunCondition     string            `json:"run-condition,omitempty" yaml:"run-condition,omitempty"`
	Parallel         bool              `json:"parallel,omitempty" yaml:"parallel,omitempty"`
	WaitFor          []string          `json:"wait-for,omitempty" yaml:"wait-for,omitempty,flow"`
	ErrorHandling    *ErrorHandling    `json:"error-handling,omitempty" yaml:"error-handling,omitempty"`
	Output           *Output           `json:"output,omitempty" yaml:"output,omitempty"`
	WorkingDirectory string            `json:"working-directory,omitempty" yaml:"working-directory,omitempty"`
	Environment      map[string]string `json:"environment,omitempty" yaml:"environment,omitempty"`
	Timeout          time.Duration     `json:"timeout,omitempty" yaml:"timeout,omitempty" form:"ms"`
	Input            string            `json:"input,omitempty" yaml:"input,omitempty"`
}

// ErrorHandling is a step's retry and fallback.
type ErrorHandling struct {
	Retry    *Retry `json:"retry,omitempty" yaml:"retry,omitempty"`
	Fallback string `json:"fallback,omitempty" yaml:"fallback,omitempty"`
}

// Retry: Attempts total tries, Delay between them.
type Retry struct {
	Attempts int           `json:"attempts" yaml:"attempts"`
	Delay    time.Duration `json:"delay" yaml:"delay" form:"ms"`
}

// OutputMode is buffer or stream.
type OutputMode string

const (
	OutputBuffer OutputMode = "buffer"
	OutputStream OutputMode = "stream"
)

// Output is a step's output management.
type Output struct {
	Mode           OutputMode `json:"mode,omitempty" yaml:"mode,omitempty"`
	BufferLimit    int64      `json:"buffer-limit,omitempty" yaml:"buffer-limit,omitempty" form:"size"` // bytes; 0 = default
	StreamCallback string     `json:"stream-callback,omitempty" yaml:"stream-callback,omitempty"`
}

// Parameter is one entry of `parameters:`.
type Parameter struct {
	Name         string      `json:"name" yaml:"-"` // the key in parameters:
	Type         ParamType   `json:"type" yaml:"type"`
	Description  string      `json:"description" yaml:"description"`
	Required     bool        `json:"required,omitempty" yaml:"required,omitempty"`
	Default      any         `json:"default,omitempty" yaml:"-"` // as decoded from YAML; written by MarshalYAML
	HasDefault   bool        `json:"-" yaml:"-"`
	Validation   *Validation `json:"validation,omitempty" yaml:"validation,omitempty"`
	Transform    string      `json:"transform,omitempty" yaml:"transform,omitempty"`
	Format       string      `json:"format,omitempty" yaml:"format,omitempty"`
	Examples     []any       `json:"examples,omitempty" yaml:"examples,omitempty,flow"`
	DetailedHelp string      `json:"detailed-help,omitempty" yaml:"detailed-help,omitempty"`
	// EscapeShell is security.escape-shell; nil means the default, which is ON.
	EscapeShell *bool `json:"escape-shell,omitempty" yaml:"-"` // written as security.escape-shell
}

// Escapes reports whether the parameter's value is shell-escaped (default on).
func (p *Parameter) Escapes() bool { return p.EscapeShell == nil || *p.EscapeShell }

// Validation holds every validation rule of the spec. Pointers distinguish
// "absent" from a zero value.
type Validation struct {
	Type        ParamType              `json:"type,omitempty" yaml:"type,omitempty"` // inside properties
	Minimum     *float64               `json:"minimum,omitempty" yaml:"minimum,omitempty"`
	Maximum     *float64               `json:"maximum,omitempty" yaml:"maximum,omitempty"`
	Pattern     string                 `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	MinLength   *int                   `json:"minLength,omitempty" yaml:"minLength,omitempty"`
	MaxLength   *int                   `json:"maxLength,omitempty" yaml:"maxLength,omitempty"`
	Enum        []any                  `json:"enum,omitempty" yaml:"enum,omitempty,flow"`
	MinItems    *int                   `json:"minItems,omitempty" yaml:"minItems,omitempty"`
	MaxItems    *int                   `json:"maxItems,omitempty" yaml:"maxItems,omitempty"`
	UniqueItems bool                   `json:"uniqueItems,omitempty" yaml:"uniqueItems,omitempty"`
	Required    []string               `json:"required,omitempty" yaml:"required,omitempty,flow"` // object type
	Properties  map[string]*Validation `json:"properties,omitempty" yaml:"properties,omitempty"`  // object type
}

// Environment is `environment:`.
type Environment struct {
	Variables map[string]string `json:"variables,omitempty" yaml:"variables,omitempty"`
	Inherit   bool              `json:"inherit,omitempty" yaml:"inherit,omitempty"`
}

// FunctionCalling is `function-calling:`.
type FunctionCalling struct {
	SchemaGeneration *SchemaGeneration `json:"schema-generation,omitempty" yaml:"schema-generation,omitempty"`
}

// SchemaGeneration controls schema export. Nil bools mean the default (true).
type SchemaGeneration struct {
	ParameterMapping    map[string]string `json:"parameter-mapping,omitempty" yaml:"parameter-mapping,omitempty"`
	IncludeDescriptions *bool             `json:"include-descriptions,omitempty" yaml:"include-descriptions,omitempty"`
	IncludeDefaults     *bool             `json:"include-defaults,omitempty" yaml:"include-defaults,omitempty"`
	ExampleGeneration   *bool             `json:"example-generation,omitempty" yaml:"example-generation,omitempty"`
	FunctionName        string            `json:"function-name,omitempty" yaml:"function-name,omitempty"`
	DescriptionTemplate string            `json:"description-template,omitempty" yaml:"description-template,omitempty"`
}

// Security is `security:`. Zero values are the defaults: isolation process,
// privilege same-as-user (the defLoader fills them in).
type Security struct {
	ExecutionPrivilege  Privilege `json:"execution-privilege" yaml:"execution-privilege,omitempty"`
	Isolation           Isolation `json:"isolation" yaml:"isolation,omitempty"`
	RequiredPermissions []string  `json:"required-permissions,omitempty" yaml:"required-permissions,omitempty"`
	Justification       string    `json:"justification,omitempty" yaml:"justification,omitempty"`
	Logging             *Logging  `json:"logging,omitempty" yaml:"logging,omitempty"`
	Auditing            *Auditing `json:"auditing,omitempty" yaml:"auditing,omitempty"`
}

// Logging is security.logging.
type Logging struct {
	Enabled             bool     `json:"enabled" yaml:"enabled"`
	Level               string   `json:"level,omitempty" yaml:"level,omitempty"`
	IncludeParameters   bool     `json:"include-parameters,omitempty" yaml:"include-parameters,omitempty"`
	SensitiveParameters []string `json:"sensitive-parameters,omitempty" yaml:"sensitive-parameters,omitempty,flow"`
}

// Auditing is security.auditing.
type Auditing struct {
	Enabled         bool          `json:"enabled" yaml:"enabled"`
	RecordCommand   bool          `json:"record-command,omitempty" yaml:"record-command,omitempty"`
	RecordOutput    bool          `json:"record-output,omitempty" yaml:"record-output,omitempty"`
	RetentionPeriod time.Duration `json:"retention-period,omitempty" yaml:"retention-period,omitempty" form:"ms"` // "30d" in YAML
}

// FilePaths is `file-paths:`.
type FilePaths struct {
	Normalize        bool           `json:"normalize,omitempty" yaml:"normalize,omitempty"`
	WorkingDirectory string         `json:"working-directory,omitempty" yaml:"working-directory,omitempty"`
	TempDirectory    string         `json:"temp-directory,omitempty" yaml:"temp-directory,omitempty"`
	CrossPlatform    *CrossPlatform `json:"cross-platform,omitempty" yaml:"cross-platform,omitempty"`
}

// CrossPlatform is file-paths.cross-platform.
type CrossPlatform struct {
	WindowsSeparator string `json:"windows-separator,omitempty" yaml:"windows-separator,omitempty"`
	UnixSeparator    string `json:"unix-separator,omitempty" yaml:"unix-separator,omitempty"`
	AutoConvert      bool   `json:"auto-convert,omitempty" yaml:"auto-convert,omitempty"`
}

// Metadata is `metadata:`.
type Metadata struct {
	Category       string   `json:"category,omitempty" yaml:"category,omitempty"`
	Subcategory    string   `json:"subcategory,omitempty" yaml:"subcategory,omitempty"`
	Tags           []string `json:"tags,omitempty" yaml:"tags,omitempty,flow"`
	SearchKeywords []string `json:"search-keywords,omitempty" yaml:"search-keywords,omitempty,flow"`
}

// Resources is `resources:`.
type Resources struct {
	Timeout   time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" form:"ms"`
	MaxMemory int64         `json:"max-memory,omitempty" yaml:"max-memory,omitempty" form:"size"` // bytes
	Cleanup   *Cleanup      `json:"cleanup,omitempty" yaml:"cleanup,omitempty"`
}

// Cleanup is resources.cleanup (a list of one-key maps in YAML).
type Cleanup struct {
	DeleteTempFiles bool     `json:"delete-temp-files,omitempty" yaml:"delete-temp-files,omitempty"`
	FinalCommands   []string `json:"final-commands,omitempty" yaml:"final-commands,omitempty"`
}

// InteractiveOptions is `interactive-options:`.
type InteractiveOptions struct {
	Timeout         time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" form:"ms"`
	DefaultResponse string        `json:"default-response" yaml:"default-response"`
}

// TestSuite is `tests:`: a list of cases, optionally with suite-wide setup,
// cleanup and environment (the spec shows both shapes).
type TestSuite struct {
	Setup       []string          `json:"setup,omitempty" yaml:"setup,omitempty"`
	Cleanup     []string          `json:"cleanup,omitempty" yaml:"cleanup,omitempty"`
	Environment map[string]string `json:"environment,omitempty" yaml:"environment,omitempty"`
	Cases       []TestCase        `json:"cases,omitempty" yaml:"cases,omitempty"`
}

// TestCase is one test.
type TestCase struct {
	Name        string            `json:"name" yaml:"name"`
	Description string            `json:"description,omitempty" yaml:"description,omitempty"`
	Parameters  map[string]string `json:"parameters,omitempty" yaml:"parameters,omitempty"`
	Expected    Expected          `json:"expected" yaml:"expected"`
	Cleanup     []string          `json:"cleanup,omitempty" yaml:"cleanup,omitempty"`
	Pos         Pos               `json:"-" yaml:"-"`
}

// Expected holds a test case's assertions. Pointers/empties mean "not asserted".
type Expected struct {
	ExitCode          *int           `json:"exit-code,omitempty" yaml:"exit-code,omitempty"`
	OutputContains    []string       `json:"output-contains,omitempty" yaml:"output-contains,omitempty" form:"one-or-list"`
	OutputNotContains []string       `json:"output-not-contains,omitempty" yaml:"output-not-contains,omitempty" form:"one-or-list"`
	OutputMatches     []string       `json:"output-matches,omitempty" yaml:"output-matches,omitempty" form:"one-or-list"`
	FileExists        []string       `json:"file-exists,omitempty" yaml:"file-exists,omitempty" form:"one-or-list"`
	FileNotExists     []string       `json:"file-not-exists,omitempty" yaml:"file-not-exists,omitempty" form:"one-or-list"`
	FileContains      []FileContains `json:"file-contains,omitempty" yaml:"file-contains,omitempty"`
	Error             *bool          `json:"error,omitempty" yaml:"error,omitempty"`
}

// FileContains asserts that Path contains Text.
type FileContains struct {
	Path string `json:"path" yaml:"path"`
	Text string `json:"text" yaml:"text"`
}

// Change is one changelog entry.
type Change struct {
	Version string `json:"version" yaml:"version"`
	Changes string `json:"changes" yaml:"changes"`
}

// Dependency is one entry of `dependencies:`.
type Dependency struct {
	Tool     string `json:"tool" yaml:"tool"`
	Version  string `json:"version,omitempty" yaml:"version,omitempty"`
	Required bool   `json:"required" yaml:"required"`
	Scope    string `json:"scope,omitempty" yaml:"scope,omitempty"` // local, user, global, any
}

// Debugging is `debugging:`.
type Debugging struct {
	Verbose bool   `json:"verbose,omitempty" yaml:"verbose,omitempty"`
	DryRun  bool   `json:"dry-run,omitempty" yaml:"dry-run,omitempty"`
	LogFile string `json:"log-file,omitempty" yaml:"log-file,omitempty"`
}

// The fewest and most CPUs a definition may ask for (sandboxed.cpus) and
// a policy may grant (limits.cpus). The kernel's least CFS quota is 1ms of
// the 100ms period the plan sets.
const (
	MinCPUs = 0.01
	MaxCPUs = 1024
)

// SandboxedExt is our own `sandboxed:` section. Nothing here weakens
// isolation; every field only narrows or selects. Its limits are requests
// the policy decides (its limits: the default when 0, clamped to the cap).
type SandboxedExt struct {
	Image     string  `json:"image,omitempty" yaml:"image,omitempty"`                       // container tier image
	Runtime   string  `json:"runtime,omitempty" yaml:"runtime,omitempty"`                   // container runtime, e.g. runsc
	PidsLimit int64   `json:"pids-limit,omitempty" yaml:"pids-limit,omitempty"`             // limits.pids: default 256 (64 for reduced)
	CPUs      float64 `json:"cpus,omitempty" yaml:"cpus,omitempty"`                         // limits.cpus, e.g. 0.5; default none
	TmpfsSize int64   `json:"tmpfs-size,omitempty" yaml:"tmpfs-size,omitempty" form:"size"` // bytes, limits.tmpfs: default 64MiB
	// ExposedAs holds the names agents call the tool and its parameters
	// by, where CYCOD cannot spell them (a discovered script's own names).
	ExposedAs *ExposedAs `json:"exposed-as,omitempty" yaml:"exposed-as,omitempty"`
	// ParameterSchemas holds, by parameter name, the JSON Schema of a
	// parameter whose type CYCOD's single type cannot say (a union, no
	// type, integer, typed items): binding reads and checks values by it
	// and schema export shows it (paramschema.go). discover writes the
	// script's own schema of every parameter here.
	ParameterSchemas map[string]ParamSchema `json:"parameter-schemas,omitempty" yaml:"parameter-schemas,omitempty"`
	// Credentials are host secrets the tool may use only through the egress
	// proxy: the sandbox sees a stand-in, the proxy puts the real value in
	// requests to the credential's hosts.
	Credentials []Credential `json:"credentials,omitempty" yaml:"credentials,omitempty"`
	// HTTP narrows the requests the proxy lets through to a host to some
	// methods and path prefixes.
	HTTP []HTTPRule `json:"http,omitempty" yaml:"http,omitempty"`
	// Quotas cap what the tool sends to hosts, besides the policy's.
	Quotas []Quota `json:"quotas,omitempty" yaml:"quotas,omitempty"`
}

// Credential is one entry of `sandboxed: credentials:`. Exactly one of
// Env, File and Command says where the real value comes from on the host;
// Name is the variable that holds the stand-in inside the sandbox (Env
// when not given). Nothing in it is substituted from parameters: the
// caller of a tool cannot choose which secret it gets.
type Credential struct {
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Env is a variable of the host environment of sandboxed.
	Env string `json:"env,omitempty" yaml:"env,omitempty"`
	// File is a file on the host (absolute, or ~/…); its content, one
	// trailing newline removed.
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	// Command is run on the host as the invoking user, without a shell
	// (argv); its standard output, one trailing newline removed.
	Command []string `json:"command,omitempty" yaml:"command,omitempty,flow"`
	// Hosts are the hosts whose requests may carry the real value: names,
	// "*.example.com" (subdomains) or IP literals; never "*".
	Hosts []string `json:"hosts" yaml:"hosts,flow"`
	// Setup says where the user gets the credential (a URL, or words): a
	// run without it is refused with this as the hint.
	Setup string `json:"setup,omitempty" yaml:"setup,omitempty"`
}

// VarName is the variable inside the sandbox that holds the stand-in.
func (c Credential) VarName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Env
}

// SourceKind is "env", "file" or "command".
func (c Credential) SourceKind() string {
	switch {
	case c.File != "":
		return "file"
	case len(c.Command) > 0:
		return "command"
	}
	return "env"
}

// HTTPRule is one entry of `sandboxed: http:`: requests to Host must use
// one of Methods (any when empty) on a path under one of Paths (any when
// empty). Several rules of one host add up.
type HTTPRule struct {
	Host    string   `json:"host" yaml:"host"`
	Methods []string `json:"methods,omitempty" yaml:"methods,omitempty,flow"`
	Paths   []string `json:"paths,omitempty" yaml:"paths,omitempty,flow"`
}

// ExposedAs is `sandboxed: exposed-as:`: the names a tool and its
// parameters carry in its function schema (`tool schema`, `sandboxed mcp`)
// where they differ from the definition's own. A discovered script called
// "_ls" with a property "-A" is the CYCOD tool "ls" with a parameter "A";
// agents see "_ls" and "-A", as the script documents them, and arguments
// given under either spelling bind to the same parameter.
type ExposedAs struct {
	// Name is the function name; "" keeps the tool's name.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Parameters maps a parameter's CYCOD name to its exposed name; a
	// parameter not listed keeps its name.
	Parameters map[string]string `json:"parameters,omitempty" yaml:"parameters,omitempty"`
}

// ExposedName is the name agents call d by: sandboxed.exposed-as.name, or
// the tool's name.
func (d *Definition) ExposedName() string {
	if d.Sandboxed != nil && d.Sandboxed.ExposedAs != nil && d.Sandboxed.ExposedAs.Name != "" {
		return d.Sandboxed.ExposedAs.Name
	}
	return d.Name
}

// OwnParam is the parameter of d that agents call exposed: the parameter
// whose sandboxed.exposed-as.parameters entry is exposed, or exposed
// itself.
func (d *Definition) OwnParam(exposed string) string {
	if d.Sandboxed != nil && d.Sandboxed.ExposedAs != nil {
		for name, e := range d.Sandboxed.ExposedAs.Parameters {
			if e == exposed {
				return name
			}
		}
	}
	return exposed
}

// ExposedParam is the name agents give parameter name of d under:
// its entry in sandboxed.exposed-as.parameters, or name itself.
func (d *Definition) ExposedParam(name string) string {
	if d.Sandboxed != nil && d.Sandboxed.ExposedAs != nil {
		if e, ok := d.Sandboxed.ExposedAs.Parameters[name]; ok {
			return e
		}
	}
	return name
}

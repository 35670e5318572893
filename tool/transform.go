package tool

import (
	"encoding/json"
	"fmt"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// TransformLimits bound one transform evaluation. Zero fields take the
// defaults of DefaultTransformLimits.
type TransformLimits struct {
	// Timeout is the wall-clock limit (default 250ms).
	Timeout time.Duration
	// MaxHeapGrowth is how much the process heap may grow while the
	// transform runs before it is stopped (default 128 MiB).
	MaxHeapGrowth uint64
	// MaxResult is the longest result text accepted, in bytes (default 1 MiB).
	MaxResult int
}

// DefaultTransformLimits are the limits Bind uses unless BindEnv says otherwise.
var DefaultTransformLimits = TransformLimits{
	Timeout:       250 * time.Millisecond,
	MaxHeapGrowth: 128 << 20,
	MaxResult:     1 << 20,
}

func (l TransformLimits) withDefaults() TransformLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTransformLimits.Timeout
	}
	if l.MaxHeapGrowth == 0 {
		l.MaxHeapGrowth = DefaultTransformLimits.MaxHeapGrowth
	}
	if l.MaxResult <= 0 {
		l.MaxResult = DefaultTransformLimits.MaxResult
	}
	return l
}

// TransformError is a transform that failed. It wraps ErrTransform.
type TransformError struct {
	Param  string // parameter name; "" when evaluated outside Bind
	Reason string // e.g. "exceeded 250ms", "ReferenceError: x is not defined"
}

func (e *TransformError) Error() string {
	if e.Param == "" {
		return "transform: " + e.Reason
	}
	return "transform of " + e.Param + ": " + e.Reason
}

// Unwrap returns ErrTransform.
func (e *TransformError) Unwrap() error { return ErrTransform }

// The sandbox a transform runs in.
//
// Each evaluation gets a fresh goja runtime holding only the ECMAScript
// built-ins and `value`: no require, no console, no host objects, so a
// transform can do no I/O. goja's Interrupt stops JavaScript code but not a
// native built-in in the middle of its loop, so three more guards apply:
//
//  1. A prelude wraps the built-ins that can produce far more than they are
//     given (repeat, padStart/padEnd, fill, join, replace, concat,
//     JSON.stringify, the array iteration methods on huge sparse arrays)
//     with size checks, and removes ArrayBuffer and the typed arrays, whose
//     constructors allocate in one step.
//  2. Backtracking regular expressions (regexp2) get a match timeout.
//  3. The evaluation runs on its own goroutine; the caller waits for the
//     result, the deadline, or a heap watchdog that samples runtime/metrics
//     every millisecond, whichever comes first. On a deadline or heap
//     breach the runtime is interrupted and the caller gets the error at
//     once; a goroutine stuck in a native call is abandoned and ends when
//     that call returns (the guards keep such calls small).

// guardMax caps the elements or characters one guarded built-in may produce.
const guardMax = 16 << 20

const preludeSrc = `(function (g) {
  'use strict';
  var MAX = %d;
  function tooBig(what) { throw new RangeError(what + ' would exceed the transform size limit'); }
  ['ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
   'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
   'BigInt64Array', 'BigUint64Array', 'Atomics', 'WeakRef', 'FinalizationRegistry'].forEach(function (n) {
    delete g[n];
  });
  var SP = String.prototype, AP = Array.prototype;
  var apply = Function.prototype.apply;
  function call(f, self, args) { return apply.call(f, self, args); }
  var repeat = SP.repeat;
  SP.repeat = function (n) {
    var s = String(this), k = Number(n);
    if (s.length * (k > 0 ? k : 0) > MAX) tooBig('repeat');
    return call(repeat, s, arguments);
  };
  ['padStart', 'padEnd'].forEach(function (name) {
    var f = SP[name];
    SP[name] = function (n) { if (Number(n) > MAX) tooBig(name); return call(f, this, arguments); };
  });
  ['replace', 'replaceAll'].forEach(function (name) {
    var f = SP[name];
    SP[name] = function (pattern, rep) {
      if (typeof rep !== 'function') {
        var s = String(this), r = String(rep);
        var per = r.length;
        if (r.indexOf('$') >= 0) per += 2 * s.length;
        if ((s.length + 1) * (per + 1) > MAX) tooBig(name);
      }
      return call(f, this, arguments);
    };
  });
  var sconcat = SP.concat;
  SP.concat = function () {
    var total = String(this).length;
    for (var i = 0; i < arguments.length; i++) { total += String(arguments[i]).length; if (total > MAX) tooBig('concat'); }
    return call(sconcat, this, arguments);
  };
  var join = AP.join;
  AP.join = function (sep) {
    var n = this.length;
    if (n > MAX) tooBig('join');
    var total = (n > 0 ? n - 1 : 0) * (sep === undefined ? 1 : String(sep).length);
    for (var i = 0; i < n; i++) {
      var e = this[i];
      if (e !== undefined && e !== null) total += String(e).length;
      if (total > MAX) tooBig('join');
    }
    return call(join, this, arguments);
  };
  ['fill', 'map', 'forEach', 'filter', 'reduce', 'reduceRight', 'some', 'every', 'find', 'findIndex',
   'findLast', 'findLastIndex', 'indexOf', 'lastIndexOf', 'includes', 'slice', 'splice', 'reverse',
   'sort', 'flat', 'flatMap', 'copyWithin', 'concat', 'toReversed', 'toSorted', 'toSpliced', 'with',
   'toLocaleString'].forEach(function (name) {
    var f = AP[name];
    if (typeof f !== 'function') return;
    AP[name] = function () { if (this.length > MAX) tooBig(name); return call(f, this, arguments); };
  });
  var from = Array.from;
  Array.from = function (src) {
    if (src !== null && src !== undefined && Number(src.length) > MAX) tooBig('Array.from');
    return call(from, this, arguments);
  };
  var stringify = JSON.stringify;
  JSON.stringify = function (v, rep, space) {
    var total = 0, user = typeof rep === 'function' ? rep : null;
    if (Array.isArray(rep)) return stringify(v, rep, space);
    return stringify(v, function (k, x) {
      if (user) x = user.call(this, k, x);
      total += String(k).length + 8;
      if (typeof x === 'string') total += x.length;
      if (total > MAX) tooBig('JSON.stringify');
      return x;
    }, space);
  };
})(this);`

var (
	preludeOnce sync.Once
	prelude     *goja.Program
)

func init() {
	// goja compiles backtracking regular expressions with regexp2, whose
	// matcher is native code that Interrupt cannot stop. This package is
	// regexp2's only user in the process.
	regexp2.DefaultMatchTimeout = 200 * time.Millisecond
}

func compiledPrelude() *goja.Program {
	preludeOnce.Do(func() {
		prelude = goja.MustCompile("prelude.js", fmt.Sprintf(preludeSrc, guardMax), true)
	})
	return prelude
}

// heapBytes samples the bytes of live and not-yet-swept heap objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// EvalTransform evaluates the JavaScript expression expr with `value` set
// to value (a string, float64, bool, []any or map[string]any; typed, so
// `value ? '-v' : ”` sees a boolean) and returns the result as text:
// null and undefined become "", numbers print without a trailing ".0",
// arrays join with "," (as JavaScript's String does), objects become JSON.
// The returned error is a *TransformError.
func EvalTransform(expr string, value any, lim TransformLimits) (string, error) {
	lim = lim.withDefaults()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	vm := goja.New()
	vm.SetMaxCallStackSize(512)
	base := heapBytes()

	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: &TransformError{Reason: fmt.Sprint(p)}}
			}
			done <- r
		}()
		r.text, r.err = evalIn(vm, expr, value, lim)
	}()

	deadline := time.NewTimer(lim.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.text, r.err
		case <-deadline.C:
			vm.Interrupt("timeout")
			return "", &TransformError{Reason: fmt.Sprintf("exceeded %v", lim.Timeout)}
		case <-tick.C:
			if h := heapBytes(); h > base && h-base > lim.MaxHeapGrowth {
				vm.Interrupt("memory")
				return "", &TransformError{Reason: fmt.Sprintf("exceeded the memory limit (%d MiB)", lim.MaxHeapGrowth>>20)}
			}
		}
	}
}

func evalIn(vm *goja.Runtime, expr string, value any, lim TransformLimits) (string, error) {
	if _, err := vm.RunProgram(compiledPrelude()); err != nil {
		return "", &TransformError{Reason: "prelude: " + err.Error()}
	}
	switch v := value.(type) {
	case []any, map[string]any:
		b, err := json.Marshal(v)
		if err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
		parsed, err := vm.RunString("JSON.parse(" + jsString(string(b)) + ")")
		if err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
		if err := vm.Set("value", parsed); err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
	case nil:
		if err := vm.Set("value", goja.Undefined()); err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
	default:
		if err := vm.Set("value", v); err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
	}
	// Parenthesised so that an object literal or a sequence is one expression;
	// a newline before ')' lets a trailing // comment end the expression.
	res, err := vm.RunString("(" + expr + "\n)")
	if err != nil {
		var intr *goja.InterruptedError
		if asInterrupted(err, &intr) {
			return "", &TransformError{Reason: "interrupted"}
		}
		return "", &TransformError{Reason: errText(err)}
	}
	if res == nil || goja.IsUndefined(res) || goja.IsNull(res) {
		return "", nil
	}
	var text string
	switch x := res.Export().(type) {
	case string:
		text = x
	case []any, map[string]any:
		// Large results are refused before they are exported as text.
		s, err := vm.RunString(`(function (v) { return JSON.stringify(v); })`)
		if err != nil {
			return "", &TransformError{Reason: err.Error()}
		}
		fn, _ := goja.AssertFunction(s)
		out, err := fn(goja.Undefined(), res)
		if err != nil {
			return "", &TransformError{Reason: errText(err)}
		}
		text = out.String()
	default:
		text = textOf(normalizeJSON(x))
	}
	if len(text) > lim.MaxResult {
		return "", &TransformError{Reason: fmt.Sprintf("result is %d bytes, more than the limit of %d", len(text), lim.MaxResult)}
	}
	return text, nil
}

func asInterrupted(err error, target **goja.InterruptedError) bool {
	ie, ok := err.(*goja.InterruptedError)
	if ok {
		*target = ie
	}
	return ok
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// errText is the first line of a script error: "ReferenceError: x is not
// defined", "RangeError: Maximum call stack size exceeded".
func errText(err error) string {
	switch e := err.(type) {
	case *goja.Exception:
		return firstLine(e.Value().String())
	case *goja.StackOverflowError:
		return "RangeError: maximum call stack size exceeded"
	}
	return firstLine(err.Error())
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// chart-render renders a Helm chart's templates the way Helm's engine does: Go's
// text/template with the sprig function library, plus the functions Helm adds (include,
// tpl, required, toYaml, fromYaml, toJson, fromJson, lookup) and the built-in objects
// (.Values, .Release, .Chart, .Capabilities, .Files, .Template). It is a rendering check
// for the eslease chart, not a replacement for helm: no hooks, no subcharts, no lint.
//
// Usage:
//
//	chart-render -chart DIR [-f values.yaml ...] [-name RELEASE] [-namespace NS] [-out DIR]
//
// Values files are merged over the chart's values.yaml, later files winning. Every
// rendered template (files starting with "_" are partials, NOTES.txt is rendered too)
// is written to -out under its template path, or printed to stdout as a YAML stream with
// "# Source:" comments when -out is empty. The chart's crds/ files are copied as they are,
// as Helm installs them. Errors (a failed `required`, a syntax error, a missing key in a
// map lookup) exit 1 with the template and line.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

// files is .Files: the chart's non-template files, read by path relative to the chart.
type files map[string][]byte

func (f files) Get(name string) string { return string(f[name]) }
func (f files) GetBytes(name string) []byte {
	return f[name]
}

// Glob returns the files whose path matches the pattern, keyed by path.
func (f files) Glob(pattern string) files {
	out := files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

func main() {
	chartDir := flag.String("chart", "", "chart directory")
	release := flag.String("name", "eslease", "release name")
	namespace := flag.String("namespace", "eslease-system", "release namespace")
	outDir := flag.String("out", "", "write each rendered template under this directory")
	var values valueFiles
	flag.Var(&values, "f", "values file merged over the chart's values.yaml (repeatable)")
	flag.Parse()
	if *chartDir == "" {
		fmt.Fprintln(os.Stderr, "usage: chart-render -chart DIR [-f values.yaml ...] [-out DIR]")
		os.Exit(2)
	}
	if err := run(*chartDir, *release, *namespace, *outDir, values); err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
}

func readYAML(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// merge copies src over dst: maps merge key by key, anything else replaces (as Helm does).
func merge(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		if v == nil {
			delete(dst, k) // null deletes a default, as in Helm
			continue
		}
		dst[k] = v
	}
	return dst
}

func run(chartDir, release, namespace, outDir string, valueFiles []string) error {
	chart, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	values, err := readYAML(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		extra, err := readYAML(f)
		if err != nil {
			return err
		}
		values = merge(values, extra)
	}
	chartFiles := files{}
	templates := map[string]string{}
	var crdFiles []string
	err = filepath.Walk(chartDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			templates[rel] = string(data)
		case strings.HasPrefix(rel, "crds/"):
			crdFiles = append(crdFiles, rel)
			chartFiles[rel] = data
		default:
			chartFiles[rel] = data
		}
		return nil
	})
	if err != nil {
		return err
	}
	chartName, _ := chart["name"].(string)
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": chartName, "Version": chart["version"], "AppVersion": chart["appVersion"],
			"Description": chart["description"], "Type": chart["type"],
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{"Version": "v1.32.0", "Major": "1", "Minor": "32",
				"GitVersion": "v1.32.0"},
			"APIVersions": apiVersions{"v1", "apps/v1", "policy/v1", "rbac.authorization.k8s.io/v1",
				"apiextensions.k8s.io/v1", "coordination.k8s.io/v1", "monitoring.coreos.com/v1"},
		},
		"Files": chartFiles,
	}

	root := template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	for _, removed := range []string{"env", "expandenv"} { // Helm removes these too
		delete(funcs, removed)
	}
	includedDepth := 0
	funcs["include"] = func(name string, data interface{}) (string, error) {
		includedDepth++
		defer func() { includedDepth-- }()
		if includedDepth > 100 {
			return "", errors.New("include: recursion too deep")
		}
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	funcs["required"] = func(message string, value interface{}) (interface{}, error) {
		if value == nil {
			return nil, errors.New(message)
		}
		if s, ok := value.(string); ok && s == "" {
			return nil, errors.New(message)
		}
		return value, nil
	}
	funcs["fail"] = func(message string) (string, error) { return "", errors.New(message) }
	funcs["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		out := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &out); err != nil {
			out["Error"] = err.Error()
		}
		return out
	}
	funcs["toJson"] = func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	}
	funcs["fromJson"] = func(s string) map[string]interface{} {
		out := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			out["Error"] = err.Error()
		}
		return out
	}
	// Rendering offline: lookup finds nothing, as `helm template` does.
	funcs["lookup"] = func(string, string, string, string) map[string]interface{} {
		return map[string]interface{}{}
	}
	root.Funcs(funcs)

	names := make([]string, 0, len(templates))
	for name := range templates {
		names = append(names, name)
	}
	sort.Strings(names)
	// Partials first, so every `define` is known before any template runs.
	for _, name := range names {
		if _, err := root.New(name).Parse(templates[name]); err != nil {
			return err
		}
	}

	var stream bytes.Buffer
	emit := func(name, text string) error {
		if outDir != "" {
			dst := filepath.Join(outDir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, []byte(text), 0o644)
		}
		fmt.Fprintf(&stream, "---\n# Source: %s/%s\n%s\n", chartName, name, text)
		return nil
	}
	sort.Strings(crdFiles)
	for _, name := range crdFiles {
		if err := emit(name, string(chartFiles[name])); err != nil {
			return err
		}
	}
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		scope := map[string]interface{}{}
		for k, v := range top {
			scope[k] = v
		}
		scope["Template"] = map[string]interface{}{"Name": chartName + "/" + name, "BasePath": chartName + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, scope); err != nil {
			return err
		}
		text := strings.TrimSpace(buf.String())
		if text == "" {
			continue // a disabled optional part renders to nothing
		}
		if err := emit(name, text); err != nil {
			return err
		}
	}
	if outDir == "" {
		_, err := os.Stdout.Write(stream.Bytes())
		return err
	}
	return nil
}

// apiVersions is .Capabilities.APIVersions, with Helm's Has method.
type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v || strings.HasPrefix(v, x+"/") {
			return true
		}
	}
	return false
}

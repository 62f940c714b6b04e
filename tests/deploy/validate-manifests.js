#!/usr/bin/env node
// Validates rendered Kubernetes manifests against the API's own OpenAPI schemas, as
// packaged by npm's kubernetes-models (built-in kinds) and @kubernetes-models/prometheus-operator
// (ServiceMonitor, PrometheusRule), and strictly: like `kubeconform --strict`, a field the
// schema does not define is an error, not only a wrong type or a missing required field.
//
// Usage: validate-manifests.js FILE_OR_DIR...   (YAML files, several documents each)
// Exit 0 when every document is valid, 1 otherwise (every problem is printed), 2 on bad use.
//
// How strictness works: the packaged validators are compiled JSON-schema checks that read
// each property the schema defines (data.replicas, data.selector, ...) and walk every key
// only where the schema allows arbitrary keys (labels, annotations, data, ...). Each object
// is handed to them behind a Proxy that records which keys were read; a key the validator
// never read is one the schema does not define. An object none of whose keys was read is
// free-form in the schema (e.g. a field typed "any JSON") and is not judged.
"use strict";

const fs = require("fs");
const path = require("path");
const yaml = require("js-yaml");

function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Za-z0-9]+$/.test(kind)) return null;
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const candidates =
    group === "monitoring.coreos.com"
      ? [`@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`]
      : [`kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`];
  for (const id of candidates) {
    try {
      const mod = require(id);
      if (mod[kind] && mod[kind].apiVersion === apiVersion && mod[kind].kind === kind) return mod[kind];
    } catch (e) {
      if (e.code !== "MODULE_NOT_FOUND") throw e;
    }
  }
  return null;
}

// Wraps `value` (and everything below it) in recording proxies; `seen` maps each wrapped
// object to the set of keys read from it.
function track(value, seen, where) {
  if (value === null || typeof value !== "object") return value;
  const keys = new Set();
  const children = Array.isArray(value) ? [] : {};
  for (const [k, v] of Object.entries(value)) children[k] = track(v, seen, where.concat([k]));
  seen.push({ where, value, keys });
  return new Proxy(children, {
    get(target, key, receiver) {
      if (typeof key === "string") keys.add(key);
      return Reflect.get(target, key, receiver);
    },
    ownKeys(target) {
      for (const k of Reflect.ownKeys(target)) if (typeof k === "string") keys.add(k);
      return Reflect.ownKeys(target);
    },
    has(target, key) {
      if (typeof key === "string") keys.add(key);
      return Reflect.has(target, key);
    },
  });
}

// The packaged schema of apiextensions.k8s.io/v1 JSONSchemaProps (the schema inside a CRD)
// leaves out these fields of the Kubernetes API type, so they are checked here, with the
// types the API gives them. A node is a JSONSchemaProps when the validator probed
// "additionalItems" on it, a key no other Kubernetes type has.
const JSON_SCHEMA_PROPS_EXTRA = {
  description: (v) => typeof v === "string",
  $ref: (v) => typeof v === "string",
  $schema: (v) => typeof v === "string",
  "x-kubernetes-preserve-unknown-fields": (v) => typeof v === "boolean",
  "x-kubernetes-embedded-resource": (v) => typeof v === "boolean",
  "x-kubernetes-int-or-string": (v) => typeof v === "boolean",
  "x-kubernetes-list-type": (v) => ["atomic", "set", "map"].includes(v),
  "x-kubernetes-list-map-keys": (v) => Array.isArray(v) && v.every((k) => typeof k === "string"),
  "x-kubernetes-map-type": (v) => ["granular", "atomic"].includes(v),
  "x-kubernetes-validations": (v) =>
    Array.isArray(v) && v.every((r) => r && typeof r === "object" && typeof r.rule === "string"),
};

function pointer(where) {
  return "/" + where.map((k) => String(k).replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
}

// Returns a list of problems for one document (empty when valid).
function validateDocument(doc) {
  const problems = [];
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return ["not an object"];
  const Model = modelFor(doc.apiVersion, doc.kind);
  if (!Model) return [`no schema for apiVersion ${doc.apiVersion} kind ${doc.kind}`];
  const seen = [];
  const proxy = track(doc, seen, []);
  try {
    Model.prototype.validate.call(proxy);
  } catch (e) {
    const details = (e.errors || []).map((err) => `${err.instancePath || "/"} ${err.message || err.keyword}`);
    problems.push(...(details.length ? details : [String(e.message || e)]));
  }
  for (const { where, value, keys } of seen) {
    if (Array.isArray(value) || keys.size === 0) continue;
    const schemaProps = keys.has("additionalItems");
    for (const k of Object.keys(value)) {
      if (keys.has(k)) continue;
      if (schemaProps && Object.prototype.hasOwnProperty.call(JSON_SCHEMA_PROPS_EXTRA, k)) {
        if (!JSON_SCHEMA_PROPS_EXTRA[k](value[k])) problems.push(`${pointer(where.concat([k]))} has a wrong type or value`);
        continue;
      }
      problems.push(`${pointer(where.concat([k]))} is not a field of the schema (unknown field "${k}")`);
    }
  }
  return problems;
}

function filesOf(target) {
  const stat = fs.statSync(target);
  if (!stat.isDirectory()) return [target];
  return fs
    .readdirSync(target)
    .sort()
    .flatMap((name) => filesOf(path.join(target, name)))
    .filter((f) => /\.ya?ml$/.test(f));
}

function main(args) {
  if (args.length === 0) {
    console.error("usage: validate-manifests.js FILE_OR_DIR...");
    return 2;
  }
  let documents = 0;
  let failures = 0;
  for (const file of args.flatMap(filesOf)) {
    let docs;
    try {
      docs = yaml.loadAll(fs.readFileSync(file, "utf8"));
    } catch (e) {
      console.log(`FAIL ${file}: not YAML: ${e.message}`);
      failures++;
      continue;
    }
    for (const doc of docs) {
      if (doc === null || doc === undefined) continue;
      documents++;
      const name = `${file}: ${doc.kind || "?"} ${(doc.metadata && doc.metadata.name) || "?"}`;
      const problems = validateDocument(doc);
      if (problems.length === 0) {
        console.log(`ok   ${name}`);
      } else {
        failures++;
        console.log(`FAIL ${name}`);
        for (const p of problems) console.log(`       ${p}`);
      }
    }
  }
  console.log(`${documents} documents, ${failures} invalid`);
  return failures === 0 && documents > 0 ? 0 : 1;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
module.exports = { validateDocument };

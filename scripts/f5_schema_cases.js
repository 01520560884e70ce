// Runs one version of F5's schemas/test/test-bigip-virtual-server.js (k8s-bigip-ctlr) with a recording
// stand-in for its SchemaHandler, and prints its cases as JSON: every document it validates and whether
// the test expects it valid (t.ok(result.valid)) or invalid (t.ok(!result.valid)).  Used by
// scripts/vendor_f5_schemas.py; not shipped.  Usage: node f5_schema_cases.js <dir holding test.js>
'use strict';
const path = require('path');
const Module = require('module');
const cases = [];
let current = null;
const stub = {
  SchemaHandler: class {
    loadSchemas(uri, cb) { cb(); }
    runValidate(data, uri) {
      current.pending = {test: current.name, schema: uri, data: JSON.parse(JSON.stringify(data)), expected: null};
      cases.push(current.pending);
      // valid: t.ok(result.valid) then sees true and t.ok(!result.valid) false, which tells the expectation
      return {valid: true, errors: [{property: '', message: ''}, {property: '', message: ''}]};
    }
  },
  handleError: () => {},
};
const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === './util') { return stub; }
  return origLoad.apply(this, arguments);
};
const suite = require(path.resolve(process.argv[2], 'test.js'));
const group = suite.bigipVirtualServer;
for (const name of Object.keys(group)) {
  if (name === 'setUp' || name === 'tearDown') { continue; }
  current = {name: name, pending: null};
  group.setUp(() => {});
  const t = {
    ok: (value) => {
      if (current.pending && current.pending.expected === null) {
        current.pending.expected = value ? 'valid' : 'invalid';
      }
    },
    strictEqual: () => {}, equal: () => {}, deepEqual: () => {}, notEqual: () => {}, done: () => {},
  };
  group[name](t);
}
process.stdout.write(JSON.stringify(cases.filter(c => c.expected !== null), null, 1) + '\n');

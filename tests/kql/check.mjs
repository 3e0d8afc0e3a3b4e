// Checks Kusto (KQL) queries, the ones our Azure Monitor workbook and log alerts run, before they
// reach Azure: each must parse and name only real tables, columns and functions of the
// Application Insights schema below. The parser is Microsoft's Kusto.Language (the C# library
// behind Kusto Explorer and Azure Data Explorer's editor), in the Bridge.NET JavaScript build
// that npm ships as @kusto/language-service-next, installed by tests/kql/install.sh.
//
// Usage: node tests/kql/check.mjs QUERIES.json, with QUERIES.json `[{"name": "...", "query": "..."}]`.
// Prints `name: line:col: message` for each error and exits 1, or `N queries: no errors` and exits
// 0; exits 2 when the file is not such a list, or the list is empty (a broken extraction must fail).
//
// Kusto.Language API used: Kusto.Language.Symbols.TableSymbol.$ctor7(name, "(col:type, ...)", null),
// Kusto.Language.Symbols.DatabaseSymbol.ctor(name, tables),
// Kusto.Language.GlobalState.Default.WithDatabase(database),
// Kusto.Language.KustoCode.ParseAndAnalyze(text, globals), code.GetDiagnostics() (syntax and
// semantic), diagnostic.Severity / Start / Message / Code, code.TryGetLineAndOffset(start, line, col).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const pkg = "./node_modules/@kusto/language-service-next/";
try {
  require(pkg + "bridge.js"); // the Bridge.NET runtime: sets the global `Bridge`
  require(pkg + "Kusto.Language.Bridge.js"); // sets the global `Kusto`
} catch (e) {
  fail(`cannot load Kusto.Language (run tests/kql/install.sh): ${e.message}`);
}
const { Kusto } = globalThis;

// The tables a query sees when it is scoped to an Application Insights component (classic names).
const common = "customDimensions:dynamic, operation_Name:string, operation_Id:string";
const tables = {
  traces:
    "timestamp:datetime, message:string, severityLevel:int, itemType:string, " +
    `${common}, customMeasurements:dynamic, operation_ParentId:string, cloud_RoleName:string, ` +
    "cloud_RoleInstance:string, appName:string, itemCount:int, sdkVersion:string",
  requests:
    "timestamp:datetime, id:string, name:string, url:string, success:string, resultCode:string, " +
    "duration:real, performanceBucket:string, itemType:string, " +
    `${common}, customMeasurements:dynamic, operation_ParentId:string, cloud_RoleName:string, ` +
    "cloud_RoleInstance:string, appName:string, itemCount:int",
  exceptions:
    "timestamp:datetime, problemId:string, type:string, message:string, outerMessage:string, " +
    `severityLevel:int, ${common}, cloud_RoleInstance:string, itemCount:int`,
};
const { TableSymbol, DatabaseSymbol } = Kusto.Language.Symbols;
const database = new DatabaseSymbol.ctor(
  "appinsights",
  Object.entries(tables).map(([name, schema]) => new TableSymbol.$ctor7(name, `(${schema})`, null)),
);
const globals = Kusto.Language.GlobalState.Default.WithDatabase(database);

function fail(message) {
  console.error(`tests/kql/check.mjs: ${message}`);
  process.exit(2);
}

const file = process.argv[2];
if (!file) fail("usage: node check.mjs QUERIES.json");
let queries;
try {
  queries = JSON.parse(readFileSync(file, "utf8"));
} catch (e) {
  fail(`${file}: ${e.message}`);
}
if (!Array.isArray(queries) || queries.length === 0) fail(`${file}: expected a non-empty JSON list`);
for (const q of queries) {
  if (typeof q?.name !== "string" || typeof q?.query !== "string" || !q.query.trim()) {
    fail(`${file}: each entry needs a "name" and a non-empty "query" string: ${JSON.stringify(q)}`);
  }
}

let errors = 0;
for (const { name, query } of queries) {
  const code = Kusto.Language.KustoCode.ParseAndAnalyze(query, globals);
  const diagnostics = code.GetDiagnostics();
  for (let i = 0; i < diagnostics.Count; i++) {
    const d = diagnostics.getItem(i);
    if (d.Severity !== Kusto.Language.DiagnosticSeverity.Error) continue;
    errors++;
    const line = { v: 0 }, col = { v: 0 };
    const where = d.Start >= 0 && code.TryGetLineAndOffset(d.Start, line, col) ? `${line.v}:${col.v}` : "?:?";
    console.log(`${name}: ${where}: ${d.Message} (${d.Code})`);
  }
}
if (errors > 0) process.exit(1);
console.log(`${queries.length} queries: no errors`);

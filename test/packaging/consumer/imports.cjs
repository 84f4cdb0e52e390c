// CommonJS: every package's public entry loads through `require`; prints the export names.
const names = {};
for (const name of ['hotload-core', 'hotload-pg', 'hotload-knex', 'hotload-claim-reconciler']) {
  names[name] = Object.keys(require(name)).sort();
}
console.log(JSON.stringify(names));

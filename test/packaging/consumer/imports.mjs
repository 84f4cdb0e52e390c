// ESM: every package's public entry loads through `import`; prints the export names.
const names = {};
for (const name of ['hotload-core', 'hotload-pg', 'hotload-knex', 'hotload-claim-reconciler']) {
  names[name] = Object.keys(await import(name)).sort();
}
console.log(JSON.stringify(names));

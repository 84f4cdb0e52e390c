// CommonJS: every installed hotload tarball loads through `require`; prints the export names.
const { dependencies } = require('./package.json');
const packed = Object.keys(dependencies).filter((name) => dependencies[name].startsWith('file:'));
const names = {};
for (const name of packed) names[name] = Object.keys(require(name)).sort();
console.log(JSON.stringify(names));

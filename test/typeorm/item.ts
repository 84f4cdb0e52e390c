import { EntitySchema } from 'typeorm';

/** A row of the fixture database's `items` table. */
export interface Item {
  id: number;
  note: string;
}

/** `items` as a TypeORM entity (an EntitySchema: no decorator compiler options needed). */
export const ItemEntity = new EntitySchema<Item>({
  name: 'Item',
  tableName: 'items',
  columns: {
    id: { type: 'int', primary: true, generated: true },
    note: { type: 'text' },
  },
});

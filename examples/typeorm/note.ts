import { EntitySchema } from 'typeorm';

/** A row of the `note` table. */
export interface Note {
  id: number;
  text: string;
}

/** The example's one entity (an EntitySchema, so no decorator compiler options are needed). */
export const NoteEntity = new EntitySchema<Note>({
  name: 'Note',
  tableName: 'note',
  columns: {
    id: { type: 'int', primary: true, generated: true },
    text: { type: 'text' },
  },
});
